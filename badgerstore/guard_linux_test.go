package badgerstore

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestGuardHooksFire checks that Badger still says, through its logger,
// what the guard listens for (space.go): before each batch of writes, at
// each memtable rotation, at the memtable flushed by Close, and before
// each table a compaction writes. A release of Badger that changed those
// lines would leave its mapped writes unguarded; this test fails then.
func TestGuardHooksFire(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	g := s.guard
	// Values that do not compress, 256 KiB a write, until a compaction
	// writes a table: a dozen memtables make enough level-0 tables for
	// one, which Badger's compactors start at their own time (Close alone
	// after 12 MiB missed it in 4 runs of 6).
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 48 || (g.hooks[hookCompactAt].Load() == 0 && time.Now().Before(deadline)); i++ {
		if err := s.Write(randomEntries(i, 256, 1024)); err != nil {
			t.Fatal(err)
		}
		if i >= 48 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for hook, name := range []string{hookWritesAt: "writes", hookRotateAt: "rotate", hookFlushAt: "flush at close", hookCompactAt: "compaction table"} {
		if n := g.hooks[hook].Load(); n == 0 {
			t.Errorf("the %s hook never fired", name)
		} else {
			t.Logf("%s: %d", name, n)
		}
	}
	if g.hooks[hookCompactAt].Load() > 0 && g.tableKeys.Load() == 0 {
		t.Error("the compaction hook did not say how many keys its table holds: the guard sizes level 0's compactions by them")
	}
}

// TestTableNeedCoversLevelZeroIntoItself: a compaction of level 0 into
// itself writes one table of all it merges, and the guard waits for room
// for all of it; a compaction between levels, of few keys, for
// compactTableMax.
func TestTableNeedCoversLevelZeroIntoItself(t *testing.T) {
	g := newGuard(t.TempDir())
	if got := g.tableNeed(1000); got != compactTableMax {
		t.Errorf("before Badger's tables are known: %d, want %d", got, compactTableMax)
	}
	var level0 []badger.TableInfo
	for i := range 30 { // 30 level-0 tables of 1 MiB, 1,000 keys each
		level0 = append(level0, badger.TableInfo{ID: uint64(i), Level: 0, KeyCount: 1000, OnDiskSize: 1 << 20})
	}
	all := append(level0, badger.TableInfo{ID: 99, Level: 1, KeyCount: 10, OnDiskSize: 100 << 20})
	g.watch(func() []badger.TableInfo { return all })
	if got := g.tableNeed(30 * 1000); got < 30<<20 {
		t.Errorf("level 0 into itself, 30,000 keys of 30 MiB: need %d, want at least 30 MiB", got)
	}
	if got := g.tableNeed(30 * 1000); got > 31<<20 {
		t.Errorf("level 0 into itself: need %d, want no more than level 0 holds", got)
	}
	if got := g.tableNeed(500); got != compactTableMax {
		t.Errorf("a table of 500 keys between levels: need %d, want %d", got, compactTableMax)
	}
}

// randomEntries returns n entries of batch b with values of size random
// bytes, which no compression shrinks.
func randomEntries(b, n, size int) []sessions.Entry {
	out := make([]sessions.Entry, n)
	for i := range out {
		v := make([]byte, size)
		rand.Read(v)
		out[i] = sessions.Entry{Key: fmt.Appendf(nil, "records/v1/test/%06d/%06d", b, i), Value: v}
	}
	return out
}

// TestGuardGivesTheReserveWhereNoHandlerDoes checks the guard's own
// answer, for the architectures without the SIGBUS handler: a store on a
// tmpfs that another process (dd) filled to 0 bytes free, closed, waits
// for the disk to stop filling and gives its reserve back before Badger
// flushes its memtable into a new table; the close succeeds and the
// entries are in the store. (Here the handler exists; the test takes the
// reserve from it, and a flush without room would kill the test binary.)
func TestGuardGivesTheReserveWhereNoHandlerDoes(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "96m")
	dir := filepath.Join(mnt, "store")
	s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	g := s.guard
	g.mu.Lock()
	if g.cover != nil {
		g.held = g.cover.take()
		g.cover.uncover()
		g.cover = nil
	}
	g.mu.Unlock()
	if g.held != reserveSize {
		t.Fatalf("the reserve holds %d bytes, want %d", g.held, reserveSize)
	}
	entries := randomEntries(0, 256, 1024) // a quarter of a memtable, to flush at Close
	if err := s.Write(entries); err != nil {
		t.Fatal(err)
	}
	filler := testsupport.FillFromOutside(t, mnt)
	if err := s.Write(entries); !errors.Is(err, ErrNoSpace) {
		t.Errorf("Write on a full disk = %v, want ErrNoSpace", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := g.releases.Load(); n != 1 {
		t.Errorf("the guard gave the reserve back %d times, want once", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, dir)); got != len(entries) {
		t.Errorf("%d entries in the store, want %d", got, len(entries))
	}
}
