package badgerstore

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/store/space"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestGuardHooksFire checks that Badger still says, through its logger,
// what the guard listens for (internal/store/space): before each batch of writes, at
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
	for i := 0; i < 48 || (g.Heard().Compact == 0 && time.Now().Before(deadline)); i++ {
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
	heard := g.Heard()
	for _, hook := range []struct {
		name string
		n    int64
	}{{"writes", heard.Writes}, {"rotate", heard.Rotate}, {"flush at close", heard.Flush}, {"compaction table", heard.Compact}} {
		if hook.n == 0 {
			t.Errorf("the %s hook never fired", hook.name)
		} else {
			t.Logf("%s: %d", hook.name, hook.n)
		}
	}
	if heard.Compact > 0 && heard.TableKeys == 0 {
		t.Error("the compaction hook did not say how many keys its table holds: the guard sizes level 0's compactions by them")
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
	if held := g.Unhandled(); held != space.ReserveSize {
		t.Fatalf("the reserve holds %d bytes, want %d", held, space.ReserveSize)
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
	if n := g.OwnReleases(); n != 1 {
		t.Errorf("the guard gave the reserve back %d times, want once", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, dir)); got != len(entries) {
		t.Errorf("%d entries in the store, want %d", got, len(entries))
	}
}
