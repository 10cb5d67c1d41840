//go:build !windows && !plan9 && !js && !wasip1 && !aix

package badgerfmt

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A check maps every table of a store to read its index and last block.
// Unmapping a file whose pages were read makes the kernel flush the
// process's TLB entries on every CPU that runs one of its threads, an
// interprocessor interrupt each time; on a virtual machine that costs
// around a hundred microseconds, and one unmap per table was most of the
// check of the million-record store of figure 9 (214 tables): with one
// unmap for all, the check takes 0.28-0.37x as long (BENCHMARKS.md, figure
// 9). An arena maps the tables of one check side by side in one region
// reserved beforehand, and unmaps them all at once when the check ends:
// one flush for the whole store.

// An arena is a region of address space reserved for the maps of one
// check. It is safe for concurrent use.
type arena struct {
	mu   sync.Mutex
	base unsafe.Pointer
	size uintptr
	used uintptr
}

// newArena reserves size bytes of address space (rounded up to pages),
// or returns nil when it cannot, for the caller to map files one by one.
// The reservation is inaccessible, so it holds no memory and is charged to
// no commit limit: it only keeps the address range for mapFile.
func newArena(size int64) *arena {
	if size <= 0 || uint64(size) > uint64(^uintptr(0)>>2) {
		return nil
	}
	n := pageRound(uintptr(size))
	p, err := unix.MmapPtr(-1, 0, nil, n, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil
	}
	return &arena{base: p, size: n}
}

// mapFile maps the first n bytes of f read-only into the arena, and
// returns them; ok is false when the arena has no room left (or the map
// failed), and the caller maps the file on its own. The bytes stay mapped
// until release.
func (a *arena) mapFile(f *os.File, n int64) (data []byte, ok bool) {
	if a == nil || n <= 0 {
		return nil, false
	}
	need := pageRound(uintptr(n))
	a.mu.Lock()
	if a.size-a.used < need {
		a.mu.Unlock()
		return nil, false
	}
	at := unsafe.Add(a.base, a.used)
	a.used += need
	a.mu.Unlock()
	// MAP_FIXED replaces the reservation at exactly that place, which is
	// ours alone: nothing else is ever mapped there.
	p, err := unix.MmapPtr(int(f.Fd()), 0, at, uintptr(n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		return nil, false
	}
	return unsafe.Slice((*byte)(p), int(n)), true
}

// release unmaps the whole arena. No slice mapFile returned may be used
// after it.
func (a *arena) release() {
	if a != nil {
		_ = unix.MunmapPtr(a.base, a.size)
	}
}

// pageRound rounds n up to a whole number of pages.
func pageRound(n uintptr) uintptr {
	page := uintptr(os.Getpagesize())
	return (n + page - 1) &^ (page - 1)
}
