package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
)

// A store from elsewhere (badgerstore.ErrUnsafeFile).
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

// Check returns an error matching storefs.ErrRefused, naming the entry,
// when the store directory dir holds anything but regular files and
// directories. It reads the directory once, without following a link or
// opening an entry.
func Check(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return err
	}
	return CheckEntries(dir, entries)
}

// CheckEntries is Check on entries, the listing of dir its caller has
// read already: an open reads its store's directory once, for this check,
// the check of its files and its removal of empty logs.
func CheckEntries(dir string, entries []fs.DirEntry) error {
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

// Resolve returns the directory of the store in dir, with the links in
// its path followed once, so that everything after works inside that one
// directory: Badger, the spool and the marker, and the doctor, which
// renames the store and must rename the directory, not a link to it. A
// "~" at the start of dir is expanded (ExpandHome), and a part of the path
// that does not exist yet is taken as written (realPath).
//
// A directory that holds no store but whose LegacyChild does is the
// parent of a store an earlier version put there: the child is returned
// (see Place).
func Resolve(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("otelrecords: empty store directory name")
	}
	dir = ExpandHome(dir)
	real, err := realPath(dir)
	if err != nil {
		return "", fmt.Errorf("otelrecords: store %s: %w", dir, err)
	}
	if child := filepath.Join(real, LegacyChild); !IsStore(real) && IsStore(child) {
		return child, nil
	}
	return real, nil
}

// realPath returns dir, absolute, with the links of the part of it that
// exists followed (filepath.EvalSymlinks); the part that does not exist
// yet is joined to it as written, which is where the directories will be
// once created (a new directory is no link, so ".." after it is its
// parent). Read as text, "link/../x" names another directory than the
// one the system creates or opens for it.
func realPath(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd + string(filepath.Separator) + dir
	}
	real, err := filepath.EvalSymlinks(dir)
	if !missing(err) {
		return real, err
	}
	parent, base := filepath.Split(strings.TrimRight(dir, string(filepath.Separator)))
	if parent == "" || parent == dir || base == "" {
		return filepath.Clean(dir), nil
	}
	real, err = realPath(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, base), nil
}
