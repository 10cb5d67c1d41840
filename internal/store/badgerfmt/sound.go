package badgerfmt

import (
	"sync"

	"github.com/dgraph-io/badger/v4/options"
)

// Tables found sound.
//
// Badger never changes a table once written: compaction writes new ones,
// under new numbers, and deletes the old. So a table CheckForOpen has
// read, and that is still the same file with the same size and times,
// holds the same bytes, and a process that opens a store again and again
// (a writer opens it at its first write and lets go when idle) need not
// read it again: CheckForOpen remembers, for each store it checked last,
// the tables it found sound, by what the file system says of them —
// device, inode, size, modification and change times. Anything written to
// a table through the file system changes its times, and a table copied
// or restored in place is another file or has another change time, so it
// is read again. What is not seen is a change made under the file system
// (a failing disk): Badger's own checksum of a table's index still catches
// that one at its open, as an error. CheckAll remembers nothing and reads
// everything.

// maxSoundStores bounds how many stores the process remembers tables
// for; past it, it forgets them all and starts again.
const maxSoundStores = 16

var sound struct {
	sync.Mutex
	byStore map[string]map[soundKey]bool
}

// soundTables returns the tables last found sound in the store in dir.
// The caller must not change the map.
func soundTables(dir string) map[soundKey]bool {
	sound.Lock()
	defer sound.Unlock()
	return sound.byStore[dir]
}

// rememberSound replaces what is remembered of the store in dir with
// tables.
func rememberSound(dir string, tables map[soundKey]bool) {
	sound.Lock()
	defer sound.Unlock()
	if sound.byStore == nil || (len(sound.byStore) >= maxSoundStores && sound.byStore[dir] == nil) {
		sound.byStore = make(map[string]map[soundKey]bool)
	}
	sound.byStore[dir] = tables
}

// ForgetSound forgets every table found sound, so that the next
// CheckForOpen of any store reads every table, as the first check of a
// process does: for tests, and for benchmarks of a process's first open
// (a records command opens its store once).
func ForgetSound() {
	sound.Lock()
	defer sound.Unlock()
	sound.byStore = nil
}

// A soundKey is a table as a check found it: its file, and what the
// MANIFEST said of it (its number and compression), which the check read
// it by.
type soundKey struct {
	ident       fileIdent
	id          uint64
	compression options.CompressionType
}

// key returns the table's soundKey.
func (t tableJob) key() soundKey {
	return soundKey{ident: t.ident, id: t.id, compression: t.compression}
}

// fileIdent is what tells one file from another, and one version of a
// file from another, without reading it: a zero fileIdent (identOf's
// where the system does not say) is never remembered.
type fileIdent struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

// known reports whether the system said enough to remember the file by.
func (id fileIdent) known() bool { return id != fileIdent{} }
