//go:build !windows && !plan9 && !js && !wasip1 && !aix

package badgerstore

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes the lock Badger takes on a store directory — flock on the
// directory itself, exclusive for a writer, shared for a reader — without
// waiting, and returns its release. A check holds it while it reads, so
// that it never reads the files of a live writer; it must be released
// before Badger opens the store, since flock excludes a second lock of the
// same process too.
func lockDir(dir string, exclusive bool) (unlock func(), err error) {
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
	return func() { f.Close() }, nil // closing the last descriptor releases the lock
}

// dataEnd returns where the data of f (size bytes long) ends: past it, the
// file holds only holes, which read as zeros. Badger sizes its logs with
// ftruncate, so a log's unwritten tail is a hole, and this spares reading
// it (tens of MiB after a crash) to find that it is empty. Where the file
// system cannot tell, it returns size.
func dataEnd(f *os.File, size int64) int64 {
	fd := int(f.Fd())
	end, off := int64(0), int64(0)
	for off < size {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err != nil {
			if errors.Is(err, unix.ENXIO) {
				return end // only holes from off on
			}
			return size
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return size
		}
		end, off = hole, hole
	}
	return min(end, size)
}
