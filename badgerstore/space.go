package badgerstore

import (
	"errors"
	"fmt"
	"syscall"
)

// Badger writes through memory maps: its write-ahead logs (.mem), its
// value logs and the tables it flushes are files sized first and then
// written through a map. On a full file system a write to a page of such a
// file that has no disk block yet raises SIGBUS, which Go turns into a
// fatal error in Badger's goroutine: the host process dies. So a writer
// checks for room before it lets Badger write — Open refuses with
// ErrNoSpace, and the records wait in memory until room comes back — and
// gives Badger's write-ahead log its blocks as soon as Badger creates it,
// so that the writes of a burst land in allocated blocks even if the file
// system fills up meanwhile; and each Write checks for room again, for the
// log and table Badger may start while it writes.
//
// What is left: a file system filled by someone else between a Write's
// check and Badger's next flush or compaction, within a store's open
// spell, can still crash the process. Writers that share a store open it
// for short spells (internal/write/sharedstore), which keeps that window small.

// MinFreeSpace is the one free-space threshold of a store: 48 MiB. A
// read-write Open refuses with ErrNoSpace while less than MinFreeSpace is
// free on the file system holding the store, and a Write while less than
// MinFreeSpace plus its entries is free. It is what Badger may start
// writing through its maps at any moment — a new write-ahead log (twice
// the memtable), the table flushed from the memtable it replaces, a
// value-log file (mapped at twice its size) — with room to spare for the
// files Badger writes beside them.
const MinFreeSpace = 48 << 20

// MinFreeSpace covers what Badger maps (a compile-time check: a constant
// below it would make this negative, which a uint cannot hold).
const _ = uint(MinFreeSpace - (2*memTableSize + memTableSize + 2*valueLogFileSize))

// ErrNoSpace is matched by the error a read-write Open returns when the
// file system holding the store has too little free space for Badger to
// write safely. It also matches syscall.ENOSPC. Nothing was changed; open
// again once there is room.
var ErrNoSpace = errors.New("otelrecords: not enough free space for the store")

// noSpace returns an error matching ErrNoSpace and syscall.ENOSPC.
func noSpace(dir string, free uint64) error {
	return noSpaceFor(dir, free, MinFreeSpace, "")
}

// noSpaceFor returns an error matching ErrNoSpace and syscall.ENOSPC for a
// file system with free bytes free where need bytes are needed (for what,
// when what is not empty).
func noSpaceFor(dir string, free, need uint64, what string) error {
	if what != "" {
		what = " " + what
	}
	return fmt.Errorf("%w at %s: %d MiB free, %d MiB needed%s (the store keeps %d MiB free: Badger writes through memory maps, and a full file system would crash the process): %w",
		ErrNoSpace, dir, free>>20, (need+1<<20-1)>>20, what, MinFreeSpace>>20, syscall.ENOSPC)
}
