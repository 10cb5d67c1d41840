package badgerstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/sessions"
)

// checkSpace returns an error matching ErrNoSpace when the file system
// holding dir has less than MinFreeSpace free (to an unprivileged user:
// the blocks kept for root are not Badger's to use).
func checkSpace(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // Badger will say what is wrong with dir
	}
	if free := st.Bavail * uint64(st.Bsize); free < MinFreeSpace {
		return noSpace(dir, free)
	}
	return nil
}

// reserveLog gives the newest write-ahead log in dir (the memtable's,
// which Badger has just created, sized but without blocks) its disk
// blocks. A file system that cannot supply them gives an error matching
// ErrNoSpace; one that cannot allocate ahead (fallocate unsupported) is
// left as it is.
func reserveLog(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	newest, best := "", uint64(0)
	for _, e := range entries {
		if id, ok := badgerfmt.ParseFileID(e.Name(), badgerfmt.MemFileExt); ok && (newest == "" || id > best) {
			newest, best = e.Name(), id
		}
	}
	if newest == "" || !strings.HasSuffix(newest, badgerfmt.MemFileExt) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, newest), os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	// Mode 0 allocates without changing the size; the blocks read as the
	// zeros the file already holds.
	switch err := unix.Fallocate(int(f.Fd()), 0, 0, fi.Size()); {
	case errors.Is(err, unix.ENOSPC):
		var st unix.Statfs_t
		_ = unix.Statfs(dir, &st)
		return noSpace(dir, st.Bavail*uint64(st.Bsize))
	default:
		return nil // done, or not supported here
	}
}

// checkWriteSpace returns an error matching ErrNoSpace when the file
// system holding dir has too little free space for Badger to take entries
// safely: room for the entries and MinFreeSpace besides. Refused, the entries are not written, and the caller keeps
// them; nothing it was told is written is lost.
func checkWriteSpace(dir string, entries []sessions.Entry) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil
	}
	need := uint64(MinFreeSpace)
	for _, e := range entries {
		need += uint64(len(e.Key) + len(e.Value))
	}
	if free := st.Bavail * uint64(st.Bsize); free < need {
		return noSpaceFor(dir, free, need, fmt.Sprintf("to write %d entries", len(entries)))
	}
	return nil
}
