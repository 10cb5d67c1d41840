package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	// What dir holds is read once, and the answer given from that one
	// reading: writers of other processes may be creating a store in dir
	// this instant, and a directory seen empty by one look and holding
	// their first file at the next would send this writer's store into
	// ChildDir, beside theirs, where no reader looks (both answers from
	// one reading are dir itself).
	holds, asked, empty := storeOrEmpty(dir)
	if holds {
		return dir, checkOwned(dir, fi, false)
	}
	child := filepath.Join(dir, ChildDir)
	if isStore(child) {
		return child, nil
	}
	if asked && fi.Mode().Perm()&0o077 == 0 {
		// Nothing but a waiter's request or a spool, in a directory no
		// other user can enter: another writer holds dir while it creates
		// a store there, before its first file, or set records aside for
		// it before there was one.
		return dir, checkOwned(dir, fi, true)
	}
	if empty && fi.Mode().Perm()&0o077 == 0 {
		// An empty directory no other user can enter: one made for the
		// store (os.MkdirTemp's, a test's).
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

// WriterPath returns the directory a writer given dir opens the store in,
// now: dir with its "~" expanded and its links followed, as Open reads it,
// and then Place's answer for it. A process that leaves something for the
// store's next opener (a request for it, a spool) leaves it there, where
// that opener looks; Place alone reads a path through a link and ".." as
// text, which may name another directory.
func WriterPath(dir string) (string, error) {
	path, err := resolve(dir)
	if err != nil {
		return "", err
	}
	return Place(path)
}

// missing reports whether err says a path does not exist, or cannot,
// since a file stands where a directory of it would be.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// isStore reports whether dir holds a store: its manifest, or any file
// Badger or otelrecords keeps in one (a store whose manifest is lost is a
// damaged store, for Open to report, not a directory to put another in;
// a store being created holds Badger's lock file before its manifest).
// A waiter's request alone is not one: a reader given a store's parent
// left its request there before it asked where the store is.
func isStore(dir string) bool {
	holds, _, _ := storeOrEmpty(dir)
	return holds
}

// regular reports whether path is a regular file (not a link to one).
func regular(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// spoolFile matches the names of a spool's files: what internal/store/spool
// writes (<20-digit stamp>-<pid>.cbor), its temporary files, and the files
// it set aside (.bad).
var spoolFile = regexp.MustCompile(`^(\d{20}-\d+\.cbor(\.bad)?|\.tmp-\d+-\d+)$`)

// ourSpool reports whether path is a spool a writer made: a directory
// (not a link) whose files, if any yet (a writer makes the directory, then
// its first file), are all named as a spool's are. A folder of the user's
// named spool, holding the user's files, is not one, and draws no store
// beside them.
func ourSpool(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	d, err := os.Open(path)
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false
	}
	for _, n := range names {
		if !spoolFile.MatchString(n) {
			return false
		}
	}
	return true
}

// waitingMarker is the file an opener waiting for the store leaves in it
// (internal/store/turns), and spoolDir the directory of the records set
// aside for it (internal/store/spool).
const (
	waitingMarker = "otelrecords.waiting"
	spoolDir      = "spool"
)

// storeOrEmpty reads dir once, and reports whether it holds a store (as
// isStore), whether it holds nothing but a waiter's request for one or a
// spool (a store another writer is creating, before its first file, or
// records set aside before there was a store), and whether it holds
// nothing at all.
func storeOrEmpty(dir string) (holds, asked, empty bool) {
	if _, err := os.Lstat(filepath.Join(dir, badger.ManifestFilename)); err == nil {
		return true, false, false
	}
	d, err := os.Open(dir)
	if err != nil {
		return false, false, false
	}
	defer d.Close()
	other := false
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			switch {
			case n == waitingMarker && regular(filepath.Join(dir, n)),
				n == spoolDir && ourSpool(filepath.Join(dir, n)):
				// A writer's: a request that is a regular file, a spool
				// of a writer's files.
				asked = true
			case storeFile(n) && n != waitingMarker:
				return true, false, false
			default:
				other = true
			}
		}
		if err != nil {
			// A request beside the user's own files is no store being
			// created: a stale one, left by a reader given the parent.
			return false, asked && !other, !asked && !other
		}
	}
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
