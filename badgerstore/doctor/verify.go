package doctor

import (
	"errors"
	"io/fs"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
)

// corrupt returns the damage package badgerfmt found as CorruptErrors,
// nil for none.
func corrupt(found []*badgerfmt.Damage) []*badgerstore.CorruptError {
	if len(found) == 0 {
		return nil
	}
	out := make([]*badgerstore.CorruptError, len(found))
	for i, d := range found {
		out[i] = &badgerstore.CorruptError{File: d.File, Problem: d.Problem, Err: d.Err}
	}
	return out
}

// Verify reads every file of the store in dir that Badger reads — the
// MANIFEST, every block of every table it lists (checksums included), and
// every entry of the logs — without opening the store, and returns one
// *badgerstore.CorruptError for each damaged file, or none. It is safe on any bytes:
// nothing it reads can crash the process. It holds the store's lock
// (shared) while it reads, and fails with an error matching
// badgerstore.ErrLocked when
// a writer holds it.
//
// A directory that holds no store gives an error matching fs.ErrNotExist;
// one holding a link, a FIFO or a device, an error matching
// badgerstore.ErrUnsafeFile
// naming it, and nothing is read.
// Verify reads no file, and says why, when the program links a version of
// Badger other than the one the store's file readers were written for.
func Verify(dir string) ([]*badgerstore.CorruptError, error) {
	unlock, err := storedir.Lock(dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		if ierr := storedir.Interrupted(dir, dir); ierr != nil {
			return nil, ierr
		}
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := storedir.Check(dir); err != nil {
		return nil, err
	}
	found, err := badgerfmt.CheckAll(dir)
	if err == nil && len(found) == 0 {
		err = storedir.Present(dir)
	}
	return corrupt(found), err
}
