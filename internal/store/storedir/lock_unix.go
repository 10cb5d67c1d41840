//go:build !windows && !plan9 && !js && !wasip1 && !aix

package storedir

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Lock takes the lock Badger takes on a store directory — flock on the
// directory itself, exclusive for a writer, shared for a reader — without
// waiting, and returns its release. A check holds it while it reads, so
// that it never reads the files of a live writer; it must be released
// before Badger opens the store, since flock excludes a second lock of the
// same process too.
func Lock(dir string, exclusive bool) (unlock func(), err error) {
	f, err := LockDir(dir, exclusive)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// LockDir is Lock, returning the directory it opened to lock, for its
// caller to read (ReadDir, and files by name relative to it): closing it
// releases the lock.
func LockDir(dir string, exclusive bool) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s is in use by another process or Store: %w", ErrLocked, dir, err)
	}
	return f, nil // closing the last descriptor releases the lock
}

// LockFile takes an exclusive flock on f without waiting: the doctor's
// journal is its lock, so two doctors never work on one store at once.
func LockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// Writable reports whether this process may write in the directory dir:
// not on a read-only file system, and with the permission to. Root may
// write where the mode bits say no; the system, not the bits, answers.
func Writable(dir string) bool {
	return unix.Access(dir, unix.W_OK) == nil
}

// Locks is whether Lock locks: a directory held by another process
// cannot be locked exclusively.
const Locks = true
