package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
)

// Where a store lives (docs/FORMAT.md, "Where a store lives").
//
// One rule: the directory a user names is the store. It is created, mode
// 0700, when it does not exist; an existing directory is used only if
// everything in it is a store's own (Badger's files, otelrecords.* files,
// the spool) or nothing is (an empty directory, or a volume holding only
// its file system's lost+found, is a store to be); anything else is
// refused, naming the fix: a directory of its own inside it. Place applies
// the rule once, where a writer is set up; the path it returns is where
// every open, request for the store and spool goes from then on, and
// Place gives that path back for it (Place(Place(d)) is Place(d)), so
// nothing that happens in the directory later sends a writer elsewhere.
//
// The one exception is kept for stores written before: earlier versions
// put the store in a child LegacyChild of a directory holding other files.
// A directory holding no store whose LegacyChild holds one names that
// child, for writers and readers alike, found once where the path is
// resolved; nothing creates such a child any more.

// LegacyChild is the child directory in which earlier versions put a
// store (badgerstore.LegacyChild).
const LegacyChild = "otelrecords"

// ErrNotStoreDir is matched by the errors of Place
// (badgerstore.ErrNotStoreDir).
var ErrNotStoreDir = errors.New("otelrecords: not a directory a store can be written in")

// ExpandHome returns dir with a leading "~" or "~/" replaced by the
// user's home directory (badgerstore.ExpandHome).
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

// Place returns the directory of the store a writer given dir writes, or
// an error matching ErrNotStoreDir where the rule allows no store
// (badgerstore.Place says it all).
func Place(dir string) (string, error) {
	path, err := Resolve(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(path)
	switch {
	case missing(err):
		return path, creatable(path)
	case err != nil:
		return "", fmt.Errorf("otelrecords: store directory %s: %w", path, err)
	case !fi.IsDir():
		return "", notDir(path, fi.Mode())
	}
	held, err := contents(path)
	if err != nil {
		return "", fmt.Errorf("otelrecords: store directory %s: %w", path, err)
	}
	if err := checkOwned(path, fi, storeDir, !held.store, filepath.Join(dir, "records")); err != nil {
		return "", err
	}
	switch {
	case held.store:
		return path, nil
	case len(held.other) > 0:
		return "", &placeError{path, fmt.Sprintf("holds %s, which %s not a store's: a store is a directory of its own; use a subdirectory, e.g. %s",
			listed(held.other), isOrAre(len(held.other)), filepath.Join(dir, "records"))}
	case !Writable(path):
		return "", &placeError{path, "is not writable: no store can be created in it"}
	}
	return path, nil
}

// missing reports whether err says a path does not exist, or cannot,
// since a file stands where a directory of it would be.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// IsStore reports whether dir holds a store: its manifest, or any other
// file Badger keeps in one (a store whose manifest is lost is a damaged
// store, for Open to report; one being created holds Badger's lock file
// before its manifest).
func IsStore(dir string) bool {
	held, _ := contents(dir)
	return held.store
}

// held is what a directory holds, as contents read it.
type held struct {
	store bool     // Badger's files: a store, or one being created
	other []string // the names of entries that are not a store's own
}

// contents reads dir once and says whether it holds a store, and which
// of its entries are not a store's own: anything but Badger's files,
// files named otelrecords.* (the waiting marker, the reserve), the spool,
// and the lost+found of a file system mounted there.
func contents(dir string) (held, error) {
	if _, err := os.Lstat(filepath.Join(dir, badger.ManifestFilename)); err == nil {
		return held{store: true}, nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return held{}, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return held{}, err
	}
	var h held
	for _, n := range names {
		switch {
		case BadgerFile(n):
			h.store = true
		case strings.HasPrefix(n, "otelrecords."), n == spoolDir, n == "lost+found":
		default:
			h.other = append(h.other, n)
		}
	}
	slices.Sort(h.other)
	return h, nil
}

// spoolDir is the directory of the records set aside for the store
// (internal/store/spool).
const spoolDir = "spool"

// listed names the first of names, and how many more there are.
func listed(names []string) string {
	s := fmt.Sprintf("%q", names[0])
	if len(names) > 1 {
		s += fmt.Sprintf(" and %d more", len(names)-1)
	}
	return s
}

// isOrAre is the verb for n names.
func isOrAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
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
		if !Writable(parent) {
			return &placeError{parent, "is not writable: the store directory " + dir + " cannot be created in it"}
		}
		return checkOwned(parent, fi, parentDir, true, "")
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

// What a directory checkOwned checks is to the store.
type dirRole int

const (
	parentDir dirRole = iota // the store directory is to be created in it
	storeDir                 // it is the store's directory
)

// BadgerFile reports whether name is a file Badger keeps in a store
// directory: one of them there makes the directory a store, or a store
// being created.
func BadgerFile(name string) bool {
	switch name {
	case badger.ManifestFilename, badger.KeyRegistryFileName, "DISCARD", "LOCK",
		"MANIFEST-REWRITE", badger.KeyRegistryRewriteFileName: // Badger's, as it creates a store or rewrites them
		return true
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// Present returns an error matching fs.ErrNotExist when dir holds no
// store: no MANIFEST (a directory with data files but no MANIFEST is a
// damaged store, which the check reports).
func Present(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("otelrecords: no store at %s: %w", dir, fs.ErrNotExist)
	}
	return nil
}
