// Package storefs opens the files inside a store the way a store must be
// read: as untrusted input. Stores are copied between machines, unpacked
// from tarballs, mounted from artifacts and shared between users, and any
// of those can put a symbolic link, a FIFO or a device where a store keeps
// a file. Followed, a link makes a reader rename, delete or truncate files
// outside the store; opened, a FIFO blocks its reader (and a host's
// Shutdown) forever; read, /dev/zero never ends.
//
// So, as the storage tools people trust do: every name is opened inside an
// os.Root (which refuses to leave the directory), checked with Lstat
// first (a link is refused, never followed), opened without blocking, and
// checked again on the descriptor (the same file Lstat saw, and a regular
// one); what is read is bounded. A refusal names the file and says what it
// is, so a person can remove it.
//
// The spool (internal/store/spool), the waiting marker (internal/store/turns) and the
// doctor's journal (badgerstore) open their files here.
package storefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrRefused is matched by the error for a file this package will not
// open: not a regular file (or not a directory where one is expected),
// larger than its bound, or changed while it was opened.
var ErrRefused = errors.New("otelrecords: file in the store refused")

// A RefusedError names a file this package would not open, and says why.
type RefusedError struct {
	// Path is the file's path.
	Path string
	// Problem says what is wrong with it, for people ("is a symbolic
	// link, not a regular file").
	Problem string
}

// Error names the file and the problem.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("otelrecords: %s %s: refused", e.Path, e.Problem)
}

// notRegular is the problem of a file of mode m where a regular file (or
// a directory, want) belongs.
func notRegular(m fs.FileMode, want string) string {
	return "is " + Kind(m) + ", not " + want + " (otelrecords follows no link out of a store and opens nothing but regular files and directories in it; remove it)"
}

// Unwrap makes the error match ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Kind names the type of a file mode for people: "a symbolic link", "a
// FIFO", "a directory".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// Regular returns a *RefusedError unless fi, the file at path, is a
// regular file of at most max bytes.
func Regular(path string, fi fs.FileInfo, max int64) error {
	switch {
	case !fi.Mode().IsRegular():
		return &RefusedError{Path: path, Problem: notRegular(fi.Mode(), "a regular file")}
	case fi.Size() > max:
		return &RefusedError{Path: path, Problem: fmt.Sprintf("is %d bytes, more than the %d such a file may be", fi.Size(), max)}
	}
	return nil
}

// Open opens the file name inside root, with flag (os.O_RDONLY, or
// os.O_WRONLY, possibly with os.O_CREATE), only if it is a regular file of
// at most max bytes. It never follows a link at the name and never
// blocks: the name is checked with Lstat, opened with O_NONBLOCK (a FIFO
// put there meanwhile would block a plain open), and the opened file
// checked to be the regular file Lstat saw. With os.O_CREATE a missing
// file is created with O_EXCL (mode perm), which follows no link either.
// Open never truncates: truncate the file once it is open.
func Open(root *os.Root, name string, flag int, perm fs.FileMode, max int64) (*os.File, error) {
	path := filepath.Join(root.Name(), name)
	fi, err := root.Lstat(name)
	switch {
	case flag&os.O_CREATE != 0 && errors.Is(err, fs.ErrNotExist):
		fi, flag = nil, flag|os.O_EXCL
	case err != nil:
		return nil, err
	default:
		if err := Regular(path, fi, max); err != nil {
			return nil, err
		}
		flag &^= os.O_CREATE | os.O_TRUNC
	}
	f, err := root.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	opened, err := f.Stat()
	if err == nil && fi != nil && !os.SameFile(fi, opened) {
		err = &RefusedError{Path: path, Problem: "changed while it was opened"}
	}
	if err == nil {
		err = Regular(path, opened, max)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile returns the content of the file name inside root, opened as
// Open does, reading at most max bytes: a file that grows past max while
// it is read is refused too.
func ReadFile(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := Open(root, name, os.O_RDONLY, 0, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &RefusedError{Path: filepath.Join(root.Name(), name), Problem: fmt.Sprintf("is more than the %d bytes such a file may be", max)}
	}
	return b, nil
}

// OpenDir opens the directory name inside root, creating it (mode 0700)
// when create is set, and returns nil, nil when it does not exist and
// create is not set. It never follows a link: anything but a directory at
// the name is refused with a *RefusedError, and the directory opened is
// checked to be the one Lstat saw.
func OpenDir(root *os.Root, name string, create bool) (*os.Root, error) {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil
		}
		if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		fi, err = root.Lstat(name)
	}
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root.Name(), name)
	if !fi.IsDir() {
		return nil, &RefusedError{Path: path, Problem: "is " + Kind(fi.Mode()) + ", not a directory"}
	}
	dir, err := root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if opened, err := dir.Stat("."); err != nil || !os.SameFile(fi, opened) {
		dir.Close()
		return nil, &RefusedError{Path: path, Problem: "changed while it was opened"}
	}
	return dir, nil
}
