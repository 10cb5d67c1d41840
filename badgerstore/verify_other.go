//go:build windows || plan9 || js || wasip1 || aix

package badgerstore

import "os"

// lockDir takes no lock where Badger does not lock with flock: a check
// then reads the files as they are, which is safe for the process but may
// call a live writer's half-written files damaged.
func lockDir(dir string, exclusive bool) (unlock func(), err error) {
	return func() {}, nil
}

// lockFile takes no lock where Badger does not lock with flock.
func lockFile(*os.File) error { return nil }

// writable reports true: where Badger has no read-only mode, a reader
// opens a store read-write anyway.
func writable(string) bool { return true }
