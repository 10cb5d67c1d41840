package badgerfmt

import (
	"os"
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
// is read again. The value logs but the newest are remembered the same
// way (sealedLog): a store of gigabytes of values would otherwise have
// every byte of its value logs read at every process's first open.
// What is not seen is a change made under the file system
// (a failing disk): Badger's own checksum of a table's index still catches
// that one at its open, as an error; in a sealed value log, as in a
// table's data blocks (which no open reads), `records doctor` finds it.
// CheckAll remembers nothing and reads everything.
//
// What a process found sound outlives it, in the user's cache directory
// (soundcache.go): a process's first open of a store this machine has
// checked before reads only the tables written since, as its later opens
// do. The file names each table by the same identity, so a store copied
// from another machine, or a table changed in any way the file system
// sees, is read again.

// maxSoundStores bounds how many stores the process remembers tables
// for; past it, it forgets them all and starts again.
const maxSoundStores = 16

var sound struct {
	sync.Mutex
	byStore map[string]map[soundKey]bool
}

// soundTables returns the tables last found sound in the store in dir:
// what this process found, or when it has checked the store not yet, what
// an earlier process left in the cache. The caller must not change the
// map.
func soundTables(dir string) map[soundKey]bool {
	sound.Lock()
	known, ok := sound.byStore[dir]
	sound.Unlock()
	if ok {
		return known
	}
	return loadSound(dir)
}

// rememberSound replaces what is remembered of the store in dir with
// tables in the process and, when the check found sound a file not
// known before it (soundTables'), in the cache. A cache file that says
// more than tables (files since deleted, or changed: other identities)
// is left as it is: every entry in it was found sound as the file it
// names, and a file gone or changed never matches one, so writing the
// file again would only cost the open that time (BENCHMARKS.md,
// figure 9: a writer's every open changes the MANIFEST and deletes a
// value log).
func rememberSound(dir string, tables, known map[soundKey]bool) {
	sound.Lock()
	rememberLocked(dir, tables)
	sound.Unlock()
	for k := range tables {
		if !known[k] {
			saveSound(dir, tables)
			return
		}
	}
}

// rememberLocked keeps tables for dir in the process; sound is locked.
func rememberLocked(dir string, tables map[soundKey]bool) {
	if sound.byStore == nil || (len(sound.byStore) >= maxSoundStores && sound.byStore[dir] == nil) {
		sound.byStore = make(map[string]map[soundKey]bool)
	}
	sound.byStore[dir] = tables
}

// ForgetSound forgets every table this process found sound, so that the
// next CheckForOpen of a store is as a new process's first: it reads
// every table but those the cache says an earlier process found sound
// (see ForgetSoundEverywhere). For tests, and for benchmarks of a
// process's first open (a records command opens its store once).
func ForgetSound() {
	sound.Lock()
	defer sound.Unlock()
	sound.byStore = nil
}

// ForgetSoundEverywhere forgets what this process found sound and what
// the cache holds of the store in dir, so that the next CheckForOpen of
// it reads every table, as the first check of a store this machine never
// checked (one copied from another machine) does.
func ForgetSoundEverywhere(dir string) {
	ForgetSound()
	if path, _, ok := soundCacheFile(dir); ok {
		os.Remove(path)
	}
}

// A soundKey is a table as a check found it: its file, and what the
// MANIFEST said of it (its number and compression), which the check read
// it by. A sealed value log is one too, with its number and the
// compression sealedLog.
type soundKey struct {
	ident       fileIdent
	id          uint64
	compression options.CompressionType
}

// sealedLog is the compression of a soundKey that is a sealed value log
// (a .vlog file but the newest), not a table: none of Badger's
// compressions (0 to 2), and it fits the cache file's byte. Badger writes
// only to the newest value log, and deletes the others whole once their
// values have moved, so a sealed one unchanged since a check found it
// sound holds the same entries; the newest is read at every check. A
// program that knew no sealedLog takes such an entry of the cache for a
// table no MANIFEST lists with that compression: it never matches.
const sealedLog options.CompressionType = 0xff

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
