package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
)

// Where a store lives.
//
// A store directory is the user's, not ours to reshape: Open never
// changes the mode of a directory it did not create. The store lives in a
// directory Open created itself (mode 0700) — the one named, when it does
// not exist yet; its child ChildDir when the one named exists, holds no
// store and is not an empty private directory (a shared /tmp/x of mode
// 1777, a build directory holding other files), so that Badger's files
// never land beside the user's own, and the named directory keeps its
// mode. A directory that already holds a store is used as it is, and so
// is an empty one no other user can enter (os.MkdirTemp's). Readers find
// the store in ChildDir as writers put it there.

// ChildDir is the directory a store is created in inside a directory that
// exists, is not a store and is not an empty private directory.
const ChildDir = "otelrecords"

// ErrNotStoreDir is matched by the error Place and Open return for a path
// where a store can never be written: a regular file, a socket or another
// non-directory; a directory with no existing parent this user may write
// in; or a directory another user could replace (writable by everyone
// without the sticky bit, or owned by another user). The message names the
// path and says what is wrong; nothing was changed.
var ErrNotStoreDir = errors.New("otelrecords: not a directory a store can be written in")

// ExpandHome returns dir with a leading "~" or "~/" replaced by the user's
// home directory (os.UserHomeDir), as a shell would: a path set in an
// environment variable or a configuration file reaches the program as
// written. Other paths, "~user" among them, are returned as they are.
func ExpandHome(dir string) string {
	if dir != "~" && !strings.HasPrefix(dir, "~/") && !strings.HasPrefix(dir, "~"+string(filepath.Separator)) {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return dir
	}
	return filepath.Join(home, dir[1:])
}

// Place returns the directory where the store for dir lives, or will live
// once a writer creates it: dir itself (its "~" expanded) when it holds a
// store, does not exist yet, or is an empty directory no other user can
// enter; otherwise its child ChildDir. It fails, with an error matching
// ErrNotStoreDir, for a path where no store can ever be written (a file, a
// socket, a read-only parent, a directory another user could replace), so
// that a writer can say so when it is set up rather than lose a session
// at its first write. It creates and changes nothing.
func Place(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("otelrecords: empty store directory name")
	}
	dir = ExpandHome(dir)
	fi, err := os.Stat(dir)
	switch {
	case missing(err):
		return dir, creatable(dir)
	case err != nil:
		return "", fmt.Errorf("otelrecords: store directory %s: %w", dir, err)
	case !fi.IsDir():
		return "", notDir(dir, fi.Mode())
	}
	if isStore(dir) {
		return dir, checkOwned(dir, fi, false)
	}
	child := filepath.Join(dir, ChildDir)
	if isStore(child) {
		return child, nil
	}
	if emptyPrivate(dir, fi) {
		return dir, checkOwned(dir, fi, true)
	}
	// The store goes in a directory of its own inside dir.
	if err := checkOwned(dir, fi, true); err != nil {
		return "", err
	}
	cfi, err := os.Lstat(child)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !writable(dir) {
			return "", &placeError{dir, "is not writable: the store's directory " + ChildDir + " cannot be created in it"}
		}
		return child, nil
	case err != nil:
		return "", fmt.Errorf("otelrecords: store directory %s: %w", child, err)
	case !cfi.IsDir():
		return "", notDir(child, cfi.Mode())
	}
	return child, checkOwned(child, cfi, true)
}

// missing reports whether err says a path does not exist, or cannot,
// since a file stands where a directory of it would be.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// isStore reports whether dir holds a store: its manifest, or any file
// Badger or otelrecords keeps in one (a store whose manifest is lost is a
// damaged store, for Open to report, not a directory to put another in).
func isStore(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, badger.ManifestFilename)); err == nil {
		return true
	}
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if storeFile(n) {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// emptyPrivate reports whether dir is empty and no other user may enter
// it: a directory made for the store (os.MkdirTemp's, a test's).
func emptyPrivate(dir string, fi fs.FileInfo) bool {
	if fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) == 0
}

// creatable returns an error when dir, which does not exist, can never be
// created: its nearest existing ancestor is not a directory this user
// may write in, or is one another user could replace.
func creatable(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	for {
		fi, err := os.Stat(parent)
		if missing(err) && parent != filepath.Dir(parent) {
			parent = filepath.Dir(parent)
			continue
		}
		if err != nil {
			return fmt.Errorf("otelrecords: store directory %s: %w", dir, err)
		}
		if !fi.IsDir() {
			return notDir(parent, fi.Mode())
		}
		if !writable(parent) {
			return &placeError{parent, "is not writable: the store directory " + dir + " cannot be created in it"}
		}
		return checkOwned(parent, fi, true)
	}
}

// notDir is the error for a path that is not a directory.
func notDir(path string, m fs.FileMode) error {
	return &placeError{path, "is " + storefs.Kind(m) + ", not a directory: a store is a directory"}
}

// placeError names a path where no store can be written, and why.
type placeError struct{ path, problem string }

func (e *placeError) Error() string {
	return fmt.Sprintf("otelrecords: %s %s", e.path, e.problem)
}

// Unwrap makes the error match ErrNotStoreDir.
func (e *placeError) Unwrap() error { return ErrNotStoreDir }
