package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/internal/store/space"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
)

// ErrCorrupt is matched (with errors.Is) by the error Open gives, and the
// errors doctor.Verify returns,
// for a store with a damaged file. The error is a *CorruptError, whose
// message names the file.
var ErrCorrupt = errors.New("otelrecords: store damaged")

// CorruptError is the damage found in one file of a store.
type CorruptError struct {
	// File is the path of the damaged file.
	File string
	// Problem says what is wrong with it, for people.
	Problem string
	// Err is the error that revealed the damage (Badger's, or the file
	// system's), or nil.
	Err error
}

// Error names the file, says what is wrong, and how to recover.
func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("otelrecords: store damaged: ")
	b.WriteString(e.File)
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	b.WriteString(" (`records doctor --dir ")
	b.WriteString(filepath.Dir(e.File))
	b.WriteString("` moves the store aside and keeps what is readable)")
	return b.String()
}

// Unwrap makes the error match ErrCorrupt, and its cause.
func (e *CorruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}

// What a store's files hold, and how to read them without Badger's Open,
// is package badgerfmt's: Badger panics on some damaged files in
// goroutines no recover reaches, and silently drops data over others, so
// every file Badger's Open reads is read there first. What is the store's
// is the lock held while it reads, and what a damaged file means to a
// caller: an error matching ErrCorrupt, and `records doctor`.

// checkBeforeOpen checks that Badger can open the store in dir without
// harming the process: it refuses a directory holding links, FIFOs or
// devices (storedir.Check), returns a *CorruptError for the first damaged
// file Badger's Open would read, and for a read-write open an error
// matching ErrNoSpace when the file system is nearly full
// (internal/store/space). It holds the store's lock while it reads,
// shared for a read-only open and exclusive otherwise, so that a live
// writer's files are never mistaken for damaged ones; when the lock is
// busy it checks only the kinds of the entries and leaves Badger to
// report the busy lock. The directory is listed once, for every check
// (BENCHMARKS.md, figure 9).
//
// A read-write open also removes the empty logs a killed writer can leave
// (clearEmptyLogs), under the same lock; a read-only one, unless it is a
// replay (which skips them), fails over them with an error matching
// ErrNeedsRecovery, as it does over a log that needs replaying.
func checkBeforeOpen(dir string, readOnly, replay bool) error {
	d, err := storedir.LockDir(dir, !readOnly)
	if err != nil {
		return storedir.Check(dir) // busy, or not a directory: Badger says which
	}
	defer d.Close() // the lock's release
	entries, err := d.ReadDir(-1)
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if err := storedir.CheckEntries(dir, entries); err != nil {
		return err
	}
	if !readOnly {
		if err := space.Check(dir); err != nil {
			return err
		}
	}
	mode := badgerfmt.ForWrite
	if readOnly {
		mode = badgerfmt.ForRead
	}
	found, err := badgerfmt.CheckForOpenModeIn(d, entries, mode)
	if err != nil {
		return nil // a directory that cannot be read is Badger's to report
	}
	if len(found) > 0 {
		d := found[0]
		return &CorruptError{File: d.File, Problem: d.Problem, Err: d.Err}
	}
	if replay {
		return nil
	}
	return clearEmptyLogs(dir, entries, readOnly)
}

// emptyLog reports whether e is a log Badger opens (a .mem or .vlog file
// named by its id) of zero bytes.
func emptyLog(e fs.DirEntry) bool {
	name := e.Name()
	if !e.Type().IsRegular() {
		return false
	}
	if _, mem := badgerfmt.ParseFileID(name, badgerfmt.MemFileExt); !mem {
		if _, vlog := badgerfmt.ParseFileID(name, badgerfmt.ValueLogFileExt); !vlog {
			return false
		}
	}
	fi, err := e.Info()
	return err == nil && fi.Size() == 0
}

// clearEmptyLogs removes the empty logs (.mem and .vlog files of zero
// bytes) in the store in dir, which its caller holds locked. A writer
// killed between creating a log and giving it its size leaves one; it
// holds nothing, and Badger, which takes an empty file for one it has just
// created, fails to open the store over it ("Create a new file"). A
// read-only open changes nothing: its error, matching ErrNeedsRecovery,
// names the file, and the next read-write open removes it. entries are
// the directory's, listed under the lock.
func clearEmptyLogs(dir string, entries []fs.DirEntry, readOnly bool) error {
	removed := false
	for _, e := range entries {
		if !emptyLog(e) {
			continue
		}
		name := e.Name()
		path := filepath.Join(dir, name)
		if readOnly {
			return fmt.Errorf("%w: %s: %s is empty, left by a writer killed as it created it", ErrNeedsRecovery, dir, name)
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("otelrecords: open store %s: remove the empty log %s a killed writer left: %w", dir, name, err)
		}
		removed = true
	}
	if removed {
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}
