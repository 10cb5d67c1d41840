package badgerstore

import "github.com/otelrecords/otelrecords/internal/store/space"

// A full disk never crashes the process: package internal/store/space
// says how (a reserve an open store holds, Badger's hooks, a SIGBUS
// handler) and what is left. What is the store's is its threshold, its
// error, and the sizes of its Badger, which the guard allocates ahead by.

// MinFreeSpace is the one free-space threshold of a store: 48 MiB. A
// read-write Open refuses with ErrNoSpace while the file system holding
// the store has less than MinFreeSpace free, and a Write while it has less
// than MinFreeSpace and the Write's entries. The reserve an open store
// holds (16 MiB) counts as free: it is the part of MinFreeSpace that no
// other process can take, kept for what Badger writes after a filling
// disk stopped the Writes (memtables still to flush, logs begun). The
// rest, 32 MiB, keeps a Write's own tables and the compactions they
// cause off the reserve.
const MinFreeSpace = space.MinFree

// ErrNoSpace is matched by the error a read-write Open returns when the
// file system holding the store has too little free space for Badger to
// write safely. It also matches syscall.ENOSPC. Nothing was changed; open
// again once there is room.
var ErrNoSpace = space.ErrNoSpace

// The sizes of a store's Badger that its guard allocates ahead by.
const (
	// memLogSize is the size Badger gives a write-ahead log: twice the
	// memtable.
	memLogSize = 2 * memTableSize

	// flushTableMax bounds the table a memtable flushes into: the entries
	// of a memtable of memTableSize (which may pass it by one
	// transaction), compressed, and the table's index.
	flushTableMax = 2 * memTableSize
)

// guardSizes are the sizes the guard of a read-write store works with.
var guardSizes = space.Sizes{
	MemLog:         memLogSize,
	FlushTableMax:  flushTableMax,
	ValueLogFile:   valueLogFileSize,
	ValueThreshold: valueThreshold,
}

// The guard's sizes cover what they must (compile-time checks: a constant
// below what it covers makes the difference negative, which a uint
// cannot hold). The reserve holds a table for every memtable Badger may
// hold (numMemtables waiting, one flushing, one written) and a new log;
// MinFreeSpace holds the reserve and twice the low water mark besides it
// (a Write's own tables do not bring the free space down to the mark),
// and what Badger maps at once.
const (
	_ = uint(space.ReserveSize - ((numMemtables+2)*flushTableMax + memLogSize))
	_ = uint(MinFreeSpace - space.ReserveSize - 2*space.LowWater)
	_ = uint(MinFreeSpace - (memLogSize + memTableSize + 2*valueLogFileSize))
)
