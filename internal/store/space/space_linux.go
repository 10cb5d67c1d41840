package space

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/sessions"
)

// Check returns an error matching ErrNoSpace when the file system
// holding dir has less than MinFree free (to an unprivileged user:
// the blocks kept for root are not Badger's to use), counting the blocks
// of a reserve a killed writer left, which the opener takes over.
func Check(dir string) error {
	free, ok := freeSpace(dir)
	if !ok {
		return nil // Badger will say what is wrong with dir
	}
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(dir, ReserveName), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		free += uint64(st.Blocks) * 512
	}
	if free < MinFree {
		return noSpace(dir, free)
	}
	return nil
}

// freeSpace returns the bytes an unprivileged user may still allocate on
// the file system holding dir.
func freeSpace(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}

// Guard keeps Badger's writes through its maps on blocks the file system
// has given, for a store open for writing (space.go says how, and what is
// left). Badger's logger calls its hooks on Badger's goroutines; a nil
// Guard (a read-only store) does nothing.
type Guard struct {
	dir   string
	sizes Sizes

	mu      sync.Mutex     // the reserve and the value log's account
	reserve *os.File       // the reserve file, once taken; nil after close
	cover   *sigbusReserve // the reserve in the SIGBUS handler's hands; nil where it is not
	held    int64          // bytes allocated in reserve, when not covered
	vlogFid uint64         // the newest value log, as last seen
	vlogEnd int64          // bytes Badger may have written into it, at most
	vlogAdd int64          // the bytes of the last Write's large values

	rotated  atomic.Bool  // a memtable rotated: allocate its new log
	closing  atomic.Bool  // Close has begun: Badger flushes, then waits for compactions
	releases atomic.Int64 // times the guard gave the reserve back (not the handler)
	hooks    [numHooks]atomic.Int64
	tables   atomic.Pointer[func() []badger.TableInfo] // Badger's tables, once open (Watch)
	// tableKeys is the keys of the last compaction table the guard sized,
	// for the test that checks Badger still says them.
	tableKeys atomic.Uint64
}

// Watch gives the guard Badger's list of its tables, which sizes the
// tables compactions write (tableNeed).
func (g *Guard) Watch(tables func() []badger.TableInfo) {
	if g != nil {
		g.tables.Store(&tables)
	}
}

// tableNeed bounds the table a compaction that added keys keys writes
// next. Between levels a table is at most compactTableMax. A compaction
// of level 0 into itself writes one table of every level-0 table it
// merges (TestDiskFilledByAnotherProcess crashed in a 29 MB one): at most
// level 0's bytes, and at most keys at the densest level-0 table's bytes
// a key, which keeps a compaction between levels, whose keys are few,
// at compactTableMax. Before Badger's tables are known (its Open), the
// bound is compactTableMax.
func (g *Guard) tableNeed(keys uint64) int64 {
	g.tableKeys.Store(keys)
	tables := g.tables.Load()
	if tables == nil || keys == 0 {
		return compactTableMax
	}
	var level0, density int64
	for _, t := range (*tables)() {
		if t.Level != 0 || t.KeyCount == 0 {
			continue
		}
		level0 += int64(t.OnDiskSize)
		density = max(density, int64(t.OnDiskSize)/int64(t.KeyCount)+1)
	}
	return max(compactTableMax, min(level0, int64(min(keys, 1<<32))*density))
}

// NewGuard returns the guard of the store in dir, a Badger of the sizes
// given, holding no reserve yet.
func NewGuard(dir string, sizes Sizes) *Guard { return &Guard{dir: dir, sizes: sizes} }

func (g *Guard) count(hook int) { g.hooks[hook].Add(1) }

// Take allocates the reserve (Open, once Badger holds the directory) and
// the newest write-ahead log, which Badger's Open made; it returns an
// error matching ErrNoSpace when the file system cannot give them.
// entries are the store's directory listed after Badger's Open, which
// the caller shares with its other passes over the files (BENCHMARKS.md,
// figure 9); nil, and Take lists it.
func (g *Guard) Take(entries []fs.DirEntry) error {
	if g == nil {
		return nil
	}
	if entries == nil {
		entries, _ = os.ReadDir(g.dir) // what it could list: Badger's to report the rest
	}
	f, err := os.OpenFile(filepath.Join(g.dir, ReserveName), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("otelrecords: open store %s: reserve: %w", g.dir, err)
	}
	g.mu.Lock()
	g.reserve = f
	g.cover = coverReserve(f)
	err = g.fill()
	g.vlogFid, _ = newestIn(entries, badgerfmt.ValueLogFileExt)
	g.vlogEnd = vlogHeaderSize
	g.mu.Unlock()
	if err != nil {
		return err
	}
	g.rotated.Store(true) // the log Open made
	_, name := newestIn(entries, badgerfmt.MemFileExt)
	return g.allocLogNamed(name)
}

// heldNow returns the bytes the reserve holds.
func (g *Guard) heldNow() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heldLocked()
}

// heldLocked is heldNow with g.mu held.
func (g *Guard) heldLocked() int64 {
	if g.cover != nil {
		return g.cover.size()
	}
	return g.held
}

// fill allocates the reserve up to ReserveSize; g.mu is held. The
// handler keeps its hold on the reserve meanwhile, for a fault may come
// at any moment: it may shorten the file while fill lengthens it, and
// then its size is the one that counts (a file longer than it says is
// only more to give back).
func (g *Guard) fill() error {
	if g.reserve == nil {
		return nil
	}
	held := g.heldLocked()
	if held >= ReserveSize {
		return nil
	}
	// Mode 0 sizes the file with its blocks, so that truncating it
	// gives them back.
	err := unix.Fallocate(int(g.reserve.Fd()), 0, 0, ReserveSize)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = writeZeros(g.reserve, ReserveSize)
	}
	if err != nil {
		return g.noSpace(err, "to hold the store's reserve")
	}
	if g.cover != nil {
		g.cover.refill(held, ReserveSize)
	}
	g.held = ReserveSize
	return nil
}

// noSpace turns a failed allocation into an error matching ErrNoSpace
// when the file system was full, and names it otherwise.
func (g *Guard) noSpace(err error, what string) error {
	if errors.Is(err, unix.ENOSPC) {
		free, _ := freeSpace(g.dir)
		return noSpaceFor(g.dir, free, MinFree, what)
	}
	return fmt.Errorf("otelrecords: %s at %s: %w", what, g.dir, err)
}

// Close removes the reserve, once Badger has closed.
func (g *Guard) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reserve == nil {
		return
	}
	if g.cover != nil {
		g.cover.take()
		g.cover.uncover()
		g.cover = nil
	}
	_ = os.Remove(g.reserve.Name())
	_ = g.reserve.Close()
	g.reserve, g.held = nil, 0
}

// release gives the reserve back to the file system, for Badger's writes
// to come, where no SIGBUS handler does at the fault: the file system was
// found full after it stopped filling.
func (g *Guard) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == 0 || g.reserve == nil || g.cover != nil {
		return
	}
	if err := g.reserve.Truncate(0); err != nil {
		return
	}
	g.held = 0
	g.releases.Add(1)
}

// holds reports whether the guard holds a reserve to give back itself.
func (g *Guard) holds() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cover == nil && g.held > 0
}

// Released returns how many times the reserve was given back.
func (g *Guard) Released() int64 {
	if g == nil {
		return 0
	}
	return g.releases.Load() + sigbusReleases.Load()
}

// ReleasedSince reports whether the reserve was given back since
// releases was n: a Write in progress then stops handing Badger entries.
func (g *Guard) ReleasedSince(n int64) bool {
	return g != nil && g.Released() != n
}

// CheckWrite returns an error matching ErrNoSpace when Badger may not take
// entries: while the reserve, taken again first if there is room for it,
// is not whole, or the file system has less than MinFree beside the
// entries. Refused, the entries are not written, and the caller keeps
// them; nothing it was told is written is lost. Let through, the part of
// the value log the entries' large values will take is allocated first.
func (g *Guard) CheckWrite(entries []sessions.Entry) error {
	if g == nil {
		return nil
	}
	free, ok := freeSpace(g.dir)
	if !ok {
		return nil
	}
	need := uint64(MinFree)
	var large int64
	for _, e := range entries {
		need += uint64(len(e.Key) + len(e.Value))
		if len(e.Value) >= g.sizes.ValueThreshold {
			large += maxHeaderSize + int64(len(e.Key)) + 8 + int64(len(e.Value)) + 4
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if held := g.heldLocked(); held < ReserveSize && free >= uint64(MinFree-held) {
		// Room again: what was given back to Badger is taken back first.
		if g.fill() == nil {
			free, _ = freeSpace(g.dir)
		}
	}
	if held := g.heldLocked(); held < ReserveSize || free+uint64(held) < need {
		room := free + uint64(held)
		return noSpaceFor(g.dir, room, need, fmt.Sprintf("to write %d entries", len(entries)))
	}
	if large > 0 {
		if err := g.allocVlog(large); err != nil {
			return err
		}
	}
	return nil
}

// Refuse returns the error of a Write of n entries that stopped because
// the reserve was given back while Badger took them.
func (g *Guard) Refuse(n int) error {
	free, _ := freeSpace(g.dir)
	return noSpaceFor(g.dir, free, MinFree, fmt.Sprintf("to write %d entries: the file system filled while they were written", n))
}

// allocVlog allocates the part of the newest value log that n more bytes
// of large values take, as far as Badger can write them there; g.mu is
// held. A value log that fills (valueLogFileSize) makes Badger start
// another during the Write: its first values are then written without
// this, just after the Write's look at the free space.
func (g *Guard) allocVlog(n int64) error {
	fid, name := newest(g.dir, badgerfmt.ValueLogFileExt)
	if name == "" {
		return nil
	}
	if fid != g.vlogFid {
		// Badger started another during the last Write, which may have
		// put all its large values there.
		g.vlogFid, g.vlogEnd = fid, vlogHeaderSize+g.vlogAdd
	}
	g.vlogAdd = n
	g.vlogEnd += n
	f, err := os.OpenFile(filepath.Join(g.dir, name), os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil // Badger's to report
	}
	defer f.Close()
	if err := allocate(f, min(g.vlogEnd, 2*g.sizes.ValueLogFile)); err != nil {
		return g.noSpace(err, "to write large values into the value log")
	}
	return nil
}

// allocLog allocates the newest write-ahead log when a memtable rotated
// since it last did. A full file system leaves it to Badger's writes,
// which the hooks watch, and to the next call.
func (g *Guard) allocLog() error {
	if !g.rotated.Load() {
		return nil
	}
	_, name := newest(g.dir, badgerfmt.MemFileExt)
	return g.allocLogNamed(name)
}

// allocLogNamed is allocLog on the write-ahead log name, the newest.
func (g *Guard) allocLogNamed(name string) error {
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(g.dir, name), os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if err := allocate(f, fi.Size()); err != nil {
		return g.noSpace(err, "to hold the store's write-ahead log")
	}
	g.rotated.Store(false)
	return nil
}

// beforeWrites is the hook before a batch of writes: Badger writes into
// the memtable's log, which is allocated but for a log begun in this
// batch, and may rotate the memtable, whose table its flush goroutine
// then writes at once.
func (g *Guard) beforeWrites() {
	if free, _ := freeSpace(g.dir); free < LowWater {
		g.lookCloser(g.flushNeed() + g.sizes.MemLog)
		return
	}
	_ = g.allocLog()
}

// beforeFlush is the hook before a memtable is flushed at Close (or by
// DropPrefix).
func (g *Guard) beforeFlush() {
	if free, _ := freeSpace(g.dir); free < LowWater {
		g.lookCloser(g.flushNeed())
	}
}

// BeforeClose gives Badger's close its room: it flushes the memtables
// still in memory.
func (g *Guard) BeforeClose() {
	if g != nil {
		g.closing.Store(true)
		if g.holds() { // else flushNeed's listing is for nothing (BENCHMARKS.md, figure 9)
			g.lookCloser(g.flushNeed())
		}
	}
}

// lookCloser waits for the file system to stop filling, then gives the
// reserve back when less than need is free: Badger is about to write
// need bytes through its maps, and cannot be stopped.
func (g *Guard) lookCloser(need int64) {
	if !g.holds() {
		return // nothing more to give
	}
	if free := settle(g.dir); free >= uint64(need) {
		return
	}
	g.release()
}

// beforeTable is the hook before a compaction writes a table: it waits
// until there is room for the table beside the tables of the memtables
// still to flush, which cannot wait. A compaction only tidies, so it
// waits for the disk rather than take the reserve; but once Close has
// flushed the memtables, the compaction it waits for may take what is
// left of the reserve (at its faults), as far as that covers the table.
func (g *Guard) beforeTable(keys uint64) {
	table := g.tableNeed(keys)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		flushes := g.flushNeed()
		need := uint64(table + flushes)
		if free, _ := freeSpace(g.dir); free >= need+LowWater {
			return
		}
		free := settle(g.dir)
		if free >= need || (g.closing.Load() && flushes == 0 && free+uint64(g.heldNow()) >= need) {
			return
		}
		time.Sleep(wait)
	}
}

// flushNeed is the room the memtables Badger holds (one log each) take
// once flushed.
func (g *Guard) flushNeed() int64 {
	n := int64(0)
	des, _ := os.ReadDir(g.dir)
	for _, de := range des {
		if _, ok := badgerfmt.ParseFileID(de.Name(), badgerfmt.MemFileExt); ok {
			n++
		}
	}
	return n * g.sizes.FlushTableMax
}

// How settle tells a file system that fills from one that stopped: it
// looks every settleEvery, and calls it settled once the free space fell
// by less than settleSlack at each of settleQuiet looks in a row (a
// process writing as fast as it can takes more than a megabyte a
// millisecond); it gives up after settleMax.
const (
	settleEvery = time.Millisecond
	settleSlack = 256 << 10
	settleQuiet = 3
	settleMax   = 200 * time.Millisecond
)

// settle waits until the free space of the file system holding dir stops
// falling, and returns it: given back while another process fills the
// disk, the reserve would go to that process.
func settle(dir string) uint64 {
	prev, _ := freeSpace(dir)
	quiet := 0
	for deadline := time.Now().Add(settleMax); time.Now().Before(deadline); {
		time.Sleep(settleEvery)
		cur, _ := freeSpace(dir)
		if cur+settleSlack >= prev {
			if quiet++; quiet >= settleQuiet {
				return cur
			}
		} else {
			quiet = 0
		}
		prev = cur
	}
	return prev
}

// newest returns the id and name of the file in dir with extension ext
// and the highest id, or "".
func newest(dir, ext string) (uint64, string) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return 0, ""
	}
	return newestIn(des, ext)
}

// newestIn is newest on the entries of a directory listed.
func newestIn(des []fs.DirEntry, ext string) (uint64, string) {
	var best uint64
	name := ""
	for _, de := range des {
		if id, ok := badgerfmt.ParseFileID(de.Name(), ext); ok && de.Type().IsRegular() && (name == "" || id > best) {
			best, name = id, de.Name()
		}
	}
	return best, name
}

// allocate gives Badger's file f disk blocks for its first n bytes,
// without changing its size (the blocks read as zeros, as the holes did).
// Where the file system cannot allocate ahead, it leaves f as it is: its
// content is Badger's, not ours to write.
func allocate(f *os.File, n int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	return err
}

// writeZeros writes n zero bytes into f from its start: the reserve,
// where the file system cannot allocate ahead.
func writeZeros(f *os.File, n int64) error {
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < n; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), n-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// Badger's sizes of its logs' parts (value.go and structs.go in v4.9.6):
// the header of a log file, and the most an entry's header takes.
const (
	vlogHeaderSize = 20
	maxHeaderSize  = 22
)

// Heard counts what the guard has heard from Badger: each of the log
// lines it listens for, and the keys of the last compaction table it
// sized. A test reads it to prove that Badger still says them: a release
// whose lines differ would leave the guard deaf.
type Heard struct {
	Writes, Rotate, Flush, Compact int64
	TableKeys                      uint64
}

// Heard returns what the guard has heard so far.
func (g *Guard) Heard() Heard {
	return Heard{
		Writes:    g.hooks[hookWritesAt].Load(),
		Rotate:    g.hooks[hookRotateAt].Load(),
		Flush:     g.hooks[hookFlushAt].Load(),
		Compact:   g.hooks[hookCompactAt].Load(),
		TableKeys: g.tableKeys.Load(),
	}
}

// Unhandled takes the reserve out of the SIGBUS handler's hands, as where
// there is no handler, so that the guard gives it back itself; it returns
// the bytes the reserve holds. The test of that path calls it on machines
// that have the handler.
func (g *Guard) Unhandled() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cover != nil {
		g.held = g.cover.take()
		g.cover.uncover()
		g.cover = nil
	}
	return g.held
}

// OwnReleases returns how many times the guard gave the reserve back
// itself, not counting the handler's.
func (g *Guard) OwnReleases() int64 { return g.releases.Load() }
