//go:build linux && (amd64 || arm64)

package space

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Giving the reserve back when a write through a map faults.
//
// The guard's hooks look at the free space before Badger writes, but
// Badger's flush and compaction goroutines write when the scheduler runs
// them, which on a loaded machine is hundreds of milliseconds later, while
// another process may be filling the disk: Badger's copy into a new table
// then races the filler for the last free pages, and faults the moment
// they are gone. No look can come between the two. So the store answers
// the fault itself: a SIGBUS handler of its own (sigbus_linux_*.s), put
// before Go's, which, for a fault on a page no block could be found for
// (BUS_ADRERR) while the file system holding an open store's reserve has
// less than sigbusFull free, waits sigbusPause and, the file system still
// full, gives back reserveChunk of the reserve (ftruncate) and returns:
// the faulting write runs again, and finds the block. Any other SIGBUS — a file truncated under a map, a full file
// system no store is on, a reserve given back already — goes to the
// handler that was there before (Go's), which does what it always did:
// crash, or panic where debug.SetPanicOnFault asks for it.
//
// A process that fills the disk stops when it is refused (ENOSPC). When
// Badger's write faults, the file system is full and the filler is being
// refused, but may still be in its last write: given back at once, the
// chunk could go to it (without the pause, one run in ten of
// TestFullDiskNeverCrashesTheWriter still crashed, in a compaction's
// table; that this was the cause is inferred, not seen). The pause lets
// it be refused and stop first. The reserve
// goes back in chunks, so that what a filler still takes is one chunk.
//
// The handler runs on the signal stack with every signal blocked (the
// mask Go gives its own handler, which it inherits), uses no Go state, no
// stack but a buffer of its own, and two system calls (fstatfs,
// ftruncate). Elsewhere (other architectures, other systems) there is no
// handler: a fault then crashes the process, as the guard's looks permit.

// sigbusSlots is how many stores of one process the handler covers; the
// stores opened beyond them hold a reserve for their hooks only.
const sigbusSlots = 16

// The handler's constants, which the assembly repeats.
const (
	reserveChunk = 1 << 20              // given back at a fault
	sigbusFull   = 1 << 20              // free space below which a fault is for want of space
	sigbusPause  = 1 * time.Millisecond // for the filler to stop
)

// sigbusSlot is one open store's reserve as the handler sees it: its file
// and its size, which the handler lowers with a compare-and-swap, and how
// many handlers are using the slot now, which a store waits to see at 0
// before it closes the file. The handler reads it by offset: fd at 0,
// size at 8, busy at 16.
type sigbusSlot struct {
	fd   atomic.Int64
	size atomic.Int64
	busy atomic.Int64
}

var (
	// sigbusReserves are the slots; a slot with size 0 is free, or spent.
	sigbusReserves [sigbusSlots]sigbusSlot
	// sigbusOld is the handler before ours, which ours goes on to.
	sigbusOld uintptr
	// sigbusReleases counts the chunks the handler gave back.
	sigbusReleases atomic.Int64

	sigbusMu      sync.Mutex // slots taken and given up; the install
	sigbusTaken   [sigbusSlots]bool
	sigbusInstall sync.Once
	sigbusOn      bool
)

// sigbusHandler is the handler (assembly); sigbusHandlerPC returns its
// address, as the kernel calls it.
func sigbusHandler()
func sigbusHandlerPC() uintptr

// sigaction is the kernel's struct sigaction on amd64 and arm64, as Go's
// runtime declares it.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// installSigbus puts the handler before the one the process has (Go's),
// once, and reports whether it is in place.
func installSigbus() bool {
	sigbusInstall.Do(func() {
		var old sigaction
		if rtSigaction(unix.SIGBUS, nil, &old) != nil || old.handler <= 1 {
			return // no handler to go on to (SIG_DFL, SIG_IGN): leave it
		}
		atomic.StoreUintptr(&sigbusOld, old.handler)
		ours := old
		ours.handler = sigbusHandlerPC()
		sigbusOn = rtSigaction(unix.SIGBUS, &ours, nil) == nil
	})
	return sigbusOn
}

// HandlerAvailable reports whether the handler is in place.
func HandlerAvailable() bool { return installSigbus() }

func rtSigaction(sig unix.Signal, act, old *sigaction) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// sigbusReserve is an open store's reserve in the handler's hands.
type sigbusReserve struct{ slot int }

// coverReserve hands the handler the reserve f, empty so far, and
// returns its slot; nil when the handler is not in place or all slots
// are taken.
func coverReserve(f *os.File) *sigbusReserve {
	if !installSigbus() {
		return nil
	}
	sigbusMu.Lock()
	defer sigbusMu.Unlock()
	for i := range sigbusReserves {
		if !sigbusTaken[i] {
			sigbusTaken[i] = true
			s := &sigbusReserves[i]
			s.size.Store(0)
			s.fd.Store(int64(f.Fd()))
			return &sigbusReserve{slot: i}
		}
	}
	return nil
}

// size returns what is left of the reserve.
func (r *sigbusReserve) size() int64 { return sigbusReserves[r.slot].size.Load() }

// refill tells the handler the reserve, of was bytes when it was looked
// at, now has size bytes; unless the handler gave some back since, and
// then its account stands.
func (r *sigbusReserve) refill(was, size int64) {
	sigbusReserves[r.slot].size.CompareAndSwap(was, size)
}

// take takes the reserve from the handler, waiting for one that is using
// it, and returns what was left of it; the store may then change or close
// the file.
func (r *sigbusReserve) take() int64 {
	s := &sigbusReserves[r.slot]
	left := s.size.Swap(0)
	for s.busy.Load() != 0 {
		// A handler that lowered the size before the swap is truncating
		// the file: a system call away.
	}
	return left
}

// uncover gives the slot up, after take.
func (r *sigbusReserve) uncover() {
	sigbusMu.Lock()
	defer sigbusMu.Unlock()
	sigbusReserves[r.slot].fd.Store(-1)
	sigbusTaken[r.slot] = false
}
