package badgerstore

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
)

// A store from elsewhere.
//
// Stores are copied between machines, unpacked from tarballs, mounted
// from artifacts and shared between users, and any of those can put a
// symbolic link, a FIFO or a device where a store keeps a file. Badger
// opens its files by name: through a link it would read, append to or
// truncate a file outside the store (its MANIFEST is appended to, its
// logs truncated, its lock file created); on a FIFO it blocks forever. So
// Open refuses a store that holds anything but regular files and
// directories, naming the first such entry, before Badger or any reader
// of ours opens a file (the spool and the waiting marker are checked again
// where they are opened, internal/ground/storefs). The directory the caller gives
// may itself be reached through a link — that is the caller's choice —
// and is resolved once, when it is opened.

// ErrUnsafeFile is matched by the error Open, OpenWait, Verify and
// Recover return for a store holding a file otelrecords will not open: a
// symbolic link, a FIFO, a device or a socket where a store keeps regular
// files. The message names the file; nothing was changed. Remove it (or
// put what it links to in its place) and open again.
var ErrUnsafeFile = storefs.ErrRefused

// checkFiles returns an error matching ErrUnsafeFile, naming the entry,
// when the store directory dir holds anything but regular files and
// directories. It reads the directory once, without following a link or
// opening an entry.
func checkFiles(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if t := e.Type(); !t.IsRegular() && !t.IsDir() {
			return &storefs.RefusedError{
				Path:    filepath.Join(dir, e.Name()),
				Problem: "is " + storefs.Kind(t) + ", where a store keeps only regular files and directories (otelrecords follows no link out of a store, and opens no FIFO or device in it; remove it, or put what it links to in its place)",
			}
		}
	}
	return nil
}

// resolve returns the directory the store in dir is in, with the links
// in its path followed once, so that everything after works inside that
// one directory: Badger, the spool and the marker, and the doctor, which
// renames the store and must rename the directory, not a link to it. A
// path that does not exist yet is returned as it is.
//
// A "~" at the start of dir is expanded (ExpandHome), and a directory
// that holds no store but whose child ChildDir does is the store's parent,
// where a writer put it (see Place): the child is returned.
func resolve(dir string) (string, error) {
	dir = ExpandHome(dir)
	real, err := filepath.EvalSymlinks(dir)
	if missing(err) {
		return dir, nil
	}
	if err != nil {
		return "", fmt.Errorf("otelrecords: store %s: %w", dir, err)
	}
	if child := filepath.Join(real, ChildDir); !isStore(real) && isStore(child) {
		return child, nil
	}
	return real, nil
}
