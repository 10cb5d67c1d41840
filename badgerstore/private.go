package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/space"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
)

// fileMode is the mode Open gives the files of a private store: Badger
// creates its tables, logs, DISCARD and LOCK with 0666 less the umask (no
// option changes it), and the umask is the host process's, not ours to
// set.
const fileMode = 0o600

// privateFiles sets the files Badger and otelrecords keep in dir to
// fileMode when the store is private: created by this open (created), or
// in a directory that is private (no permission for group or others), or
// with a private MANIFEST (which this sets at the store's creation, and
// its owner opens up, with the rest, to share the store). So a store stays
// unreadable to other users in a directory they may enter (an existing
// one a user named, mkdir -p's 0755), or if its directory is opened up
// later. Files Badger creates while the store is open are set at the
// next Open or Close. A failure is returned; Open and Close report it to
// their handler and go on.
func privateFiles(dir string, created bool) error {
	return privateFilesIn(dir, nil, created)
}

// privateFilesIn is privateFiles with the directory's entries already
// listed, when not nil: Open lists the store once after Badger's open for
// the full-disk guard and this pass (BENCHMARKS.md, figure 9). The
// reserve, which the guard creates after that listing, is looked at by
// name when the entries lack it.
func privateFilesIn(dir string, des []fs.DirEntry, created bool) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !created && fi.Mode().Perm()&0o077 != 0 {
		mfi, err := os.Lstat(filepath.Join(dir, badger.ManifestFilename))
		if err != nil || mfi.Mode().Perm()&0o077 != 0 {
			return nil
		}
	}
	if des == nil {
		if des, err = os.ReadDir(dir); err != nil {
			return err
		}
	} else if !slices.ContainsFunc(des, func(de fs.DirEntry) bool { return de.Name() == space.ReserveName }) {
		if rfi, err := os.Lstat(filepath.Join(dir, space.ReserveName)); err == nil {
			des = append(des[:len(des):len(des)], fs.FileInfoToDirEntry(rfi))
		}
	}
	known := privateTablesOf(dir)
	private := make(map[string]bool, len(known))
	defer rememberPrivateTables(dir, private)
	var errs []error
	for _, de := range des {
		if !de.Type().IsRegular() || !storeFile(de.Name()) {
			continue
		}
		table := strings.HasSuffix(de.Name(), ".sst")
		if table && known[de.Name()] {
			private[de.Name()] = true
			continue
		}
		info, err := de.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // compacted away meanwhile
				errs = append(errs, err)
			}
			continue
		}
		if info.Mode().Perm() != fileMode {
			if err := os.Chmod(filepath.Join(dir, de.Name()), fileMode); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
				continue
			}
		}
		if table {
			private[de.Name()] = true
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("otelrecords: make the files of store %s private: %w", dir, err)
	}
	return nil
}

// listStore lists the store directory dir, or returns nil when it cannot
// (each pass then lists it, and reports what it cannot).
func listStore(dir string) []fs.DirEntry {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	return des
}

// The tables privateFiles found or made private, per store directory:
// Badger never gives a table's number to another table, nor changes a
// table's mode, so a later pass in the process need not stat them again
// (an open and a close each pass over a store of a hundred tables; the
// stats were a fifth of what a read-write open adds to Badger's). Logs,
// the MANIFEST and the rest are checked at every pass: Badger creates
// them again under the same names. A table someone else makes readable
// while the process runs stays so until another process opens the
// store; the directory, which Open never opens up, still keeps others
// out.
var privateTables struct {
	sync.Mutex
	byDir map[string]map[string]bool
}

// maxPrivateDirs bounds the directories privateTables remembers; past
// it, it forgets them all and starts again.
const maxPrivateDirs = 16

// privateTablesOf returns the tables known private in dir. The caller
// must not change the map.
func privateTablesOf(dir string) map[string]bool {
	privateTables.Lock()
	defer privateTables.Unlock()
	return privateTables.byDir[dir]
}

// rememberPrivateTables replaces what is known private in dir with
// tables.
func rememberPrivateTables(dir string, tables map[string]bool) {
	privateTables.Lock()
	defer privateTables.Unlock()
	if privateTables.byDir == nil || (len(privateTables.byDir) >= maxPrivateDirs && privateTables.byDir[dir] == nil) {
		privateTables.byDir = make(map[string]map[string]bool)
	}
	privateTables.byDir[dir] = tables
}

// storeFile reports whether name is a file Badger or otelrecords keeps in
// a store directory; other files there are not ours to change.
func storeFile(name string) bool {
	return storedir.BadgerFile(name) || name == waitingMarker || name == space.ReserveName
}

// waitingMarker is the file an opener waiting for the store leaves in it
// (internal/store/turns).
const waitingMarker = "otelrecords.waiting"
