// Package space keeps a full file system from crashing the process that
// holds a store open for writing: the free-space threshold Open and Write
// keep (MinFree), and the Guard that a read-write store on Badger holds
// while it is open (a reserve, Badger's hooks, the SIGBUS handler).
//
// Badger writes through memory maps: its write-ahead logs (.mem), its
// value logs (.vlog) and its tables (.sst) are files sized with truncate,
// which gives them no disk blocks, and then written through a map. When
// the file system has no block left for a page written so, the kernel
// raises SIGBUS, which Go turns into a fatal error in Badger's goroutine:
// no recover reaches it, and the host process dies. Badger writes so
//
//   - a write-ahead log: the entries of every write (Badger's write
//     goroutine), and the header of each new log, made when a memtable
//     fills (2 MiB mapped);
//   - a value log: values of valueThreshold and more, and the header of
//     the new one each open makes (32 MiB mapped);
//   - a table: each memtable flushed (Badger's flush goroutine, at its own
//     time after the memtable filled, and at Close), and each table a
//     compaction writes (its compactor goroutines, at any time);
//   - DISCARD: its first page, when a store is created.
//
// Refusing writes on a nearly full disk (the checks before Open and
// Write, all there was before) is not enough: another process may fill
// the disk between a check and the flush, compaction or close that
// follows, and Badger's goroutines write when the scheduler runs them —
// on a loaded machine, hundreds of milliseconds after any look at the
// free space, racing the filler for the last free pages. Measured before
// the guard: a writer on a tmpfs that another process (dd) filled to 0
// bytes at random moments died of SIGBUS in table.CreateTable in every
// run, at one of the first fills (RELIABILITY.md §4 has the tests and the
// commands). So a store open for writing (its Guard, space_linux.go):
//
//   - holds a reserve: a file of ReserveSize bytes with its blocks
//     allocated (otelrecords.reserve), taken at Open and removed at Close,
//     which no other process can fill;
//   - answers the fault itself: a SIGBUS handler put before Go's
//     (sigbus_linux.go, on amd64 and arm64), for a fault on a page that
//     found no block while the file system holding a reserve is full,
//     waits a millisecond for the filler to be refused and stop, gives
//     1 MiB of the reserve back, and lets the write run again. Every other
//     SIGBUS goes on to Go's handler, as before;
//   - allocates each write-ahead log as Badger makes it, and the part of
//     the value log a Write's large values will take before the Write, so
//     that writing an entry seldom needs a block at all;
//   - has a compaction, which can wait, wait for room for its table beside
//     what the memtables still to flush need, rather than take the reserve
//     (a hook: Badger says, through its logger, on the goroutine about to
//     write, that it will write a compaction's table; the other hooks say
//     a batch of writes, a memtable's rotation, a flush at Close begin);
//   - refuses a Write, with ErrNoSpace, while the reserve is not whole or
//     the file system has less than MinFree beside it, and stops
//     handing Badger a Write's entries once the reserve is given back; the
//     records wait in memory, then in the spool, or are dropped and
//     counted, as RELIABILITY.md says. Once room comes back, a Write takes
//     the reserve again and writes.
//
// What is left: a process that keeps allocating after the file system is
// full (retrying its refused writes) takes each part of the reserve given
// back, and the process crashes once it is spent; so it does when Badger
// needs more than ReserveSize after the disk filled, more than it holds
// in memtables. Where there is no handler (architectures other than amd64
// and arm64, more than sigbusSlots stores open in one process, a program
// that puts its own SIGBUS handler in after ours), the guard gives the
// reserve back itself when a hook finds the disk full, after it stopped
// filling: a write Badger makes between the disk filling and the guard's
// next look can still crash the process. Another release of Badger whose
// log lines differ would leave the hooks unheard (a test checks they
// fire). On systems other than Linux no space is checked or held.
package space

import (
	"errors"
	"fmt"
	"syscall"
)

// MinFree is the one free-space threshold of a store
// (badgerstore.MinFreeSpace): Check refuses a file system with less free,
// and CheckWrite one with less beside a Write's entries. The reserve
// (ReserveSize of it) counts as free; the rest keeps a Write's own tables
// and the compactions they cause off the reserve.
const MinFree = 48 << 20

// The sizes the guard works with (space_linux.go).
const (
	// ReserveSize is the reserve an open store holds: a table for each
	// memtable that may be waiting to flush, flushing, or written (two
	// more than numMemtables), and a new write-ahead log.
	ReserveSize = 16 << 20

	// compactTableMax bounds a table a compaction between levels writes:
	// Badger makes each about the target size of its level,
	// baseTableSize at the base level and twice as large each level
	// below; 8 MiB is the base level four levels up, a store of many
	// gigabytes. A compaction of level 0 into itself, which Badger runs
	// while level 0 cannot go down, writes one table of all it merges,
	// as large as level 0 (Guard.tableNeed).
	compactTableMax = 8 << 20

	// LowWater is the free space below which the guard looks closer
	// before Badger writes: it waits for the disk to stop filling and may
	// give the reserve back. Above it, the file system would have to lose
	// LowWater in the moments before the write for the write to fault.
	LowWater = 16 << 20
)

// Sizes are the sizes of the Badger a guard guards, as the store's
// options set them: the guard allocates ahead, and waits for room, by
// them. The store's options check, at compile time, that ReserveSize and
// MinFree cover them.
type Sizes struct {
	// MemLog is the size Badger gives a write-ahead log: twice the
	// memtable.
	MemLog int64
	// FlushTableMax bounds the table a memtable flushes into: the entries
	// of a memtable (which may pass its size by one transaction),
	// compressed, and the table's index.
	FlushTableMax int64
	// ValueLogFile is the size of one value-log file.
	ValueLogFile int64
	// ValueThreshold is the size from which a value goes into the value
	// log rather than beside its key.
	ValueThreshold int
}

// ErrNoSpace is matched by the errors Check and the guard return when the
// file system holding the store has too little free space for Badger to
// write safely (badgerstore.ErrNoSpace). It also matches syscall.ENOSPC.
var ErrNoSpace = errors.New("otelrecords: not enough free space for the store")

// noSpace returns an error matching ErrNoSpace and syscall.ENOSPC.
func noSpace(dir string, free uint64) error {
	return noSpaceFor(dir, free, MinFree, "")
}

// noSpaceFor returns an error matching ErrNoSpace and syscall.ENOSPC for a
// file system with free bytes free where need bytes are needed (for what,
// when what is not empty).
func noSpaceFor(dir string, free, need uint64, what string) error {
	if what != "" {
		what = " " + what
	}
	return fmt.Errorf("%w at %s: %d MiB free, %d MiB needed%s (the store keeps %d MiB free, %d of them held in reserve while it is open: Badger writes through memory maps, and a full file system would crash the process): %w",
		ErrNoSpace, dir, free>>20, (need+1<<20-1)>>20, what, MinFree>>20, ReserveSize>>20, syscall.ENOSPC)
}

// ReserveName is the file holding an open store's reserve.
const ReserveName = "otelrecords.reserve"

// The log lines by which Badger v4.9.6 says, on the goroutine about to
// do it, that it will write through its maps (Options.Debugf, which the
// store's logger receives): the guard's hooks.
const (
	// hookWrites: DB.writeRequests, before a batch of writes goes into
	// the value log and the memtable's log, rotating full memtables.
	hookWrites = "writeRequests called. Writing to value log"
	// hookRotate: DB.ensureRoomForWrite, a full memtable has just been
	// handed to the flush goroutine; a new log is made next.
	hookRotate = "Flushing memtable, mt.size=%d size of flushChan: %d\n"
	// hookFlush: DB.close and DB.DropPrefix, before the memtable is
	// flushed.
	hookFlush = "Flushing memtable"
	// hookCompact: a compaction's table is built; it is written next.
	hookCompact = "[%d] LOG Compact. Added %d keys. Skipped %d keys. Iteration took: %v"
)

// Hook runs the guard's check for the Badger log line format, if it is
// one of the hooks, with the line's arguments. It is called on Badger's
// goroutines.
func (g *Guard) Hook(format string, args []any) {
	if g == nil {
		return
	}
	switch format {
	case hookWrites:
		g.count(hookWritesAt)
		g.beforeWrites()
	case hookRotate:
		g.count(hookRotateAt)
		g.rotated.Store(true)
	case hookFlush:
		g.count(hookFlushAt)
		g.beforeFlush()
	case hookCompact:
		g.count(hookCompactAt)
		keys := uint64(0)
		if len(args) > 1 {
			keys, _ = args[1].(uint64) // "Added %d keys"
		}
		g.beforeTable(keys)
	}
}

// Indexes of the hooks in Guard.hooks, which counts them (for the test
// that checks Badger still says what the guard listens for).
const (
	hookWritesAt = iota
	hookRotateAt
	hookFlushAt
	hookCompactAt
	numHooks
)
