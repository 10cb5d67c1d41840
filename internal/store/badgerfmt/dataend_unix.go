//go:build !windows && !plan9 && !js && !wasip1 && !aix

package badgerfmt

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

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
