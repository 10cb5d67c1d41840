//go:build windows || plan9 || js || wasip1 || aix

package storedir

import "os"

// Lock takes no lock where Badger does not lock with flock: a check
// then reads the files as they are, which is safe for the process but may
// call a live writer's half-written files damaged.
func Lock(dir string, exclusive bool) (unlock func(), err error) {
	return func() {}, nil
}

// LockDir opens dir and takes no lock (see Lock): its caller reads the
// directory through it and closes it.
func LockDir(dir string, exclusive bool) (*os.File, error) {
	return os.Open(dir)
}

// LockFile takes no lock where Badger does not lock with flock.
func LockFile(*os.File) error { return nil }

// Writable reports true: where Badger has no read-only mode, a reader
// opens a store read-write anyway.
func Writable(string) bool { return true }

// Locks is whether Lock locks: here it does not.
const Locks = false
