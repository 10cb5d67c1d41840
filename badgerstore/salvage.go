package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/keys"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/otelrecords/otelrecords/internal/badgerfmt"

	"github.com/otelrecords/otelrecords/internal/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

// Recovery from a damaged store, for `records doctor`.
//
// Badger cannot open a store with a damaged file, and would lose more than
// the damage if it could (it truncates a log at the first bad entry). So
// the store is moved aside and read without Badger's database code, by
// package badgerfmt (badgerfmt.Salvage), and what is left is written into
// a new store. What is the store's is the lock, the move, the new store
// and the spool.

// A Recovery says what Recover did.
type Recovery struct {
	// Dir is the store's directory, holding the new store.
	Dir string
	// Aside is where the damaged store was moved, untouched; "" when the
	// store was healthy and nothing was done.
	Aside string
	// Damage is what was found wrong, one entry per damaged file.
	Damage []*CorruptError
	// Kept counts what the new store holds, by kind ("sessions" for
	// session rows; keys otelrecords does not know count under "").
	Kept map[string]int
	// Lost says, for people, what could not be read: blocks of tables,
	// stretches of logs, values of the value log.
	Lost []string
	// LostEntries is how many entries are known to be lost: a lower bound,
	// since a table whose index is damaged cannot say how many it held.
	LostEntries int
	// Spool reports whether a spool (records set aside for a busy store)
	// was carried over into the new store, to be merged by its next
	// opener.
	Spool bool
}

// Recover moves the damaged store in dir aside, to
// dir.damaged-<UTC time>, creates a new store in dir, and copies into it
// every record and session row it can still read from the damaged one,
// which it never changes. A healthy store (Verify finds nothing) is left
// as it is, and the Recovery says so (Aside is ""). Recover holds the
// store's lock while it works, and fails with an error matching ErrLocked
// when another process has the store open. Like Verify, it reads no file,
// moves nothing and says why when the program links a version of Badger
// other than the one the store's file readers were written for.
func Recover(dir string) (*Recovery, error) {
	unlock, err := lockDir(dir, true)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("otelrecords: no store at %s: %w", dir, err)
		}
		return nil, err
	}
	defer unlock()
	damage, err := badgerfmt.CheckAll(dir)
	if err != nil {
		return nil, fmt.Errorf("otelrecords: check store %s: %w", dir, err)
	}
	rec := &Recovery{Dir: dir, Damage: corrupt(damage), Kept: map[string]int{}}
	if len(damage) == 0 {
		if err := storeThere(dir); err != nil {
			return nil, err
		}
		return rec, nil
	}

	aside := dir + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s.damaged-%s-%d", dir, time.Now().UTC().Format("20060102T150405Z"), i)
	}
	// The lock is on the directory itself, so it moves with it: no one
	// opens the damaged store while it is read.
	if err := os.Rename(dir, aside); err != nil {
		return nil, fmt.Errorf("otelrecords: move the damaged store aside: %w", err)
	}
	rec.Aside = aside
	// Paths in the report name the files where they now are.
	for _, d := range rec.Damage {
		d.File = filepath.Join(aside, filepath.Base(d.File))
	}

	read, err := badgerfmt.Salvage(aside, describeKey)
	if err != nil {
		return rec, err
	}
	rec.Lost, rec.LostEntries = read.Lost, read.LostEntries
	kept := make([]sessions.Entry, len(read.Entries))
	for i, e := range read.Entries {
		kept[i] = sessions.Entry{Key: e.Key, Value: e.Value}
	}
	if err := writeRecovered(dir, kept, rec); err != nil {
		return rec, err
	}
	// A spool holds whole records that never reached Badger: give it to
	// the new store, whose next opener merges it.
	if _, err := os.Stat(spool.Dir(aside)); err == nil {
		if err := os.Rename(spool.Dir(aside), spool.Dir(dir)); err != nil {
			return rec, fmt.Errorf("otelrecords: carry the spool over to the new store: %w", err)
		}
		rec.Spool = true
	}
	return rec, nil
}

// recreateWait bounds how long Recover waits for a process that opened the
// new store meanwhile (asking it to yield, as any waiting opener does).
const recreateWait = 10 * time.Second

// writeRecovered creates the new store in dir and writes the entries into
// it, waiting a little for a process that created it meanwhile.
func writeRecovered(dir string, kept []sessions.Entry, rec *Recovery) error {
	ctx, cancel := context.WithTimeout(context.Background(), recreateWait)
	defer cancel()
	s, err := OpenWait(ctx, dir, nil, WithErrorHandler(nil))
	if err != nil {
		return fmt.Errorf("otelrecords: create the new store (the damaged one is safe at %s): %w", rec.Aside, err)
	}
	const batch = 4096
	for i := 0; i < len(kept); i += batch {
		if err := s.Write(kept[i:min(i+batch, len(kept))]); err != nil {
			_ = s.Close()
			return fmt.Errorf("otelrecords: write the new store (the damaged one is safe at %s): %w", rec.Aside, err)
		}
	}
	for _, e := range kept {
		kind, _, _, err := keys.Parse(e.Key)
		if err != nil {
			kind = ""
		}
		rec.Kept[kind]++
	}
	return s.Close()
}

// describeKey names a key for people: the record or session row it
// holds, or the key itself, quoted.
func describeKey(k []byte) string {
	kind, session, seq, err := keys.Parse(k)
	switch {
	case err != nil:
		return fmt.Sprintf("key %q", k)
	case kind == keys.SessionsKind:
		return fmt.Sprintf("the session row of %d", session)
	}
	return fmt.Sprintf("a %q record (session %d, seq %d)", kind, session, seq)
}
