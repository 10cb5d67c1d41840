package sharedstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/sessions/sessionstest"
)

// Time in these tests is synctest's wherever it works, and it works with
// Badger: its goroutines start and end inside the bubble, and its file
// I/O only keeps the fake clock still while it runs. One thing it cannot
// fake is a file's modification time, so a waiting marker written in a
// bubble is never stale there (its time is years after the bubble's
// clock); the tests remove the marker instead of letting it age, and
// internal/store/turns tests its ageing.

func TestWriterConformance(t *testing.T) {
	sessionstest.TestStore(t, func(t *testing.T) sessions.Store {
		return sharedstore.New(filepath.Join(t.TempDir(), "store"), nil)
	})
}

func entries(kv ...string) []sessions.Entry {
	var es []sessions.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		es = append(es, sessions.Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return es
}

// contents lists the store's entries as key=value.
func contents(t *testing.T, s sessions.Store) string {
	t.Helper()
	var out []string
	for e, err := range s.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(e.Key)+"="+string(e.Value))
	}
	return strings.Join(out, " ")
}

// hold opens the store in dir as another process would, holding it until
// it is closed.
func hold(t *testing.T, dir string) *badgerstore.Store {
	t.Helper()
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// free reports whether another process could open the store now.
func free(dir string) error {
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err == nil {
		st.Close()
	}
	return err
}

func TestWriterTouchesNothingUntilWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	w := sharedstore.New(dir, nil)
	if err := w.Write(nil); err != nil {
		t.Fatal(err)
	}
	if n, err := w.WriteContext(context.Background(), nil); n != 0 || err != nil {
		t.Fatalf("WriteContext of nothing = %d, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a Writer that never wrote created %s", dir)
	}
	if err := w.Write(entries("k", "v")); !errors.Is(err, sessions.ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
	if _, err := w.WriteContext(context.Background(), entries("k", "v")); !errors.Is(err, sessions.ErrClosed) {
		t.Fatalf("WriteContext after Close = %v, want ErrClosed", err)
	}
}

func TestWriterLetsGoWhenIdle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		w := sharedstore.New(dir, nil)
		defer w.Close()
		if err := w.Write(entries("k", "v")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(sharedstore.IdleRelease - time.Millisecond)
		if err := free(dir); !errors.Is(err, badgerstore.ErrLocked) {
			t.Fatalf("open beside a Writer just used = %v, want ErrLocked", err)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait() // the release, closing Badger
		if err := free(dir); err != nil {
			t.Fatalf("the Writer did not let the store go after %v idle: %v", sharedstore.IdleRelease, err)
		}
		// It opens again for the next write.
		if err := w.Write(entries("k2", "v")); err != nil {
			t.Fatal(err)
		}
		if got := contents(t, w); got != "k=v k2=v" {
			t.Fatalf("store holds %q", got)
		}
		if got := w.StoreStats(); got != (recorder.StoreStats{Opens: 2}) {
			t.Fatalf("StoreStats = %+v, want 2 opens: one, and one after the idle release", got)
		}
	})
}

func TestWriterYieldsToAWaiter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	marker := filepath.Join(dir, "otelrecords.waiting")
	synctest.Test(t, func(t *testing.T) {
		w := sharedstore.New(dir, nil)
		defer w.Close()
		if err := w.Write(entries("a", "1")); err != nil {
			t.Fatal(err)
		}
		// Another process (pid 1 here) asks for the store.
		if err := os.WriteFile(marker, []byte("1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(entries("b", "2")); err != nil {
			t.Fatal(err)
		}
		if err := free(dir); err != nil {
			t.Fatalf("the writer did not let the store go for a waiter: %v", err)
		}
		os.Remove(marker) // served
		// It stays away for YieldGap, then writes again.
		time.Sleep(sharedstore.YieldGap - time.Millisecond)
		if err := w.Write(entries("c", "3")); !errors.Is(err, badgerstore.ErrLocked) {
			t.Fatalf("write right after yielding = %v, want ErrLocked (staying away)", err)
		}
		time.Sleep(time.Millisecond)
		if err := w.Write(entries("c", "3")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWriteContextWaitsForTheHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		w := holdThenWrite(t, dir, time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		if n, err := w.WriteContext(ctx, entries("a", "1")); n != 0 || err != nil {
			t.Fatalf("WriteContext = %d, %v; want written", n, err)
		}
		// Retries are at most 200 ms apart.
		if waited := time.Since(start); waited < time.Second || waited > 1200*time.Millisecond {
			t.Fatalf("WriteContext got in after %v, want within 200ms of the holder letting go at 1s", waited)
		}
		// Once it has the store, the writer takes its request back: the
		// directory holds what it would had no one waited.
		if b, err := os.ReadFile(filepath.Join(dir, "otelrecords.waiting")); err == nil {
			t.Fatalf("marker %q left behind after the writer got its turn", b)
		}
		if got := w.StoreStats(); got != (recorder.StoreStats{Opens: 1, BusyWaits: 1}) {
			t.Fatalf("StoreStats = %+v, want one open and one busy wait", got)
		}
		if got := contents(t, w); got != "a=1" {
			t.Fatalf("store holds %q", got)
		}
	})
}

func TestWriteContextSpoolsWhenTheStoreStaysBusy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		holder := hold(t, dir)
		w := sharedstore.New(dir, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		es := entries("a", "1", "b", "2")
		n, err := w.WriteContext(ctx, es)
		// Spooled before the deadline, leaving the time spooling takes.
		want := 2*time.Second - sharedstore.SpoolTime(es)
		if n != 2 || err != nil || time.Since(start) != want {
			t.Fatalf("WriteContext = %d, %v after %v; want 2 spooled after %v, before the 2s deadline", n, err, time.Since(start), want)
		}
		// The wait it states is the one it made (issue 22.4: a report
		// said "for over 10s" after 1.1 s).
		if got := w.StoreStats(); got != (recorder.StoreStats{BusyWaits: 1, Spooled: 2, FirstSpoolWait: want}) {
			t.Fatalf("StoreStats = %+v, want one busy wait, 2 spooled after waiting %v", got, want)
		}
		if !spool.Has(dir) {
			t.Fatal("nothing in the spool")
		}
		w.Close()
		holder.Close()

		// The next writer merges the spool when it opens.
		next := sharedstore.New(dir, nil)
		defer next.Close()
		if got := contents(t, next); got != "a=1 b=2" {
			t.Fatalf("the next writer reads %q, want the spooled entries", got)
		}
		if spool.Has(dir) {
			t.Fatal("spool left after a merge")
		}
	})
}

func TestWriteContextReportsASpoolThatFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		holder := hold(t, dir)
		defer holder.Close()
		// The spool cannot be a directory: a file is in its place.
		if err := os.WriteFile(spool.Dir(dir), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		w := sharedstore.New(dir, nil)
		defer w.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := w.WriteContext(ctx, entries("a", "1"))
		if n != 0 || !errors.Is(err, badgerstore.ErrLocked) || !strings.Contains(err.Error(), "spool") {
			t.Fatalf("WriteContext = %d, %v; want an error naming the busy store and the spool", n, err)
		}
		if got := w.StoreStats(); got.Spooled != 0 {
			t.Fatalf("StoreStats = %+v, want nothing counted as spooled", got)
		}
	})
}

// A failure other than a busy store is not waited for, and not spooled:
// the caller keeps the entries and writes them once the cause is gone.
func TestWriteContextFailsAtOnceOtherwise(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(base, "damaged")
	st, err := badgerstore.Open(damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := os.Truncate(filepath.Join(damaged, badger.ManifestFilename), 12); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want error
	}{{file, nil}, {damaged, badgerstore.ErrCorrupt}} {
		synctest.Test(t, func(t *testing.T) {
			w := sharedstore.New(tc.dir, func(error) {})
			defer w.Close()
			start := time.Now()
			n, err := w.WriteContext(context.Background(), entries("b", "2"))
			if n != 0 || err == nil || errors.Is(err, badgerstore.ErrLocked) || (tc.want != nil && !errors.Is(err, tc.want)) || time.Since(start) != 0 {
				t.Fatalf("%s: WriteContext = %d, %v after %v; want a failure at once", tc.dir, n, err, time.Since(start))
			}
			if spool.Has(tc.dir) || w.StoreStats() != (recorder.StoreStats{}) {
				t.Fatalf("%s: spooled (%+v), want nothing", tc.dir, w.StoreStats())
			}
		})
	}
}

func TestSpoolMergedInOrderAndBadFileSetAside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	w := sharedstore.New(dir, nil)
	if err := w.Write(entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := spool.Write(dir, entries("b", "2", "c", "3")); err != nil {
		t.Fatal(err)
	}
	if err := w.Spool(entries("c", "3b")); !errors.Is(err, nil) {
		t.Fatal(err)
	}
	bad := filepath.Join(spool.Dir(dir), "00000000000000000001-1.cbor")
	if err := os.WriteFile(bad, []byte{0xff, 0xfe}, 0o600); err != nil {
		t.Fatal(err)
	}
	var reported []error
	next := sharedstore.New(dir, func(err error) { reported = append(reported, err) })
	defer next.Close()
	if got, want := contents(t, next), "a=1 b=2 c=3b"; got != want {
		t.Fatalf("store after merge = %q, want %q (later spool files win)", got, want)
	}
	if _, err := os.Stat(bad + ".bad"); err != nil || len(reported) != 1 {
		t.Fatalf("the bad spool file: %v, reported %v; want it set aside and reported once", err, reported)
	}
	if spool.Has(dir) {
		t.Fatal("spool left after a merge")
	}
}

// Two writers of one process on one store (two TracerProviders, say) take
// turns too: a busy one yields to the other's request.
func TestTwoWritersInOneProcessTakeTurns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		busy := sharedstore.New(dir, nil)
		defer busy.Close()
		other := sharedstore.New(dir, nil)
		defer other.Close()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				busy.Write(entries(fmt.Sprint("busy", i), "x")) // never idle long enough to let go on its own
				time.Sleep(10 * time.Millisecond)
			}
		}()
		defer func() { close(stop); <-done }()
		time.Sleep(time.Millisecond) // busy holds the store
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n, err := other.WriteContext(ctx, entries("other", "y")); n != 0 || err != nil {
			t.Fatalf("second writer of the process = %d, %v; want it written", n, err)
		}
		if got := other.StoreStats(); got.BusyWaits != 1 || got.Opens != 1 {
			t.Fatalf("second writer's StoreStats = %+v, want one wait and one open", got)
		}
	})
}

// Close does not hold the Writer's lock while Badger closes: a Close
// waiting for a Scan in progress leaves the other operations free, even
// from the Scan's loop body (a prune deletes while it reads), where they
// fail with ErrClosed instead of waiting for the Close that waits for
// them.
func TestCloseWaitsForAScanWithoutBlockingIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		w := sharedstore.New(dir, nil)
		if err := w.Write(entries("a", "1", "b", "2")); err != nil {
			t.Fatal(err)
		}
		inScan := make(chan struct{})
		closeErr := make(chan error, 1)
		var deleteErr error
		go func() {
			for range w.Scan(nil, nil) {
				close(inScan)
				synctest.Wait() // Close has begun, and waits for this Scan
				_, deleteErr = w.DeleteRange(nil, nil, nil)
				return
			}
		}()
		<-inScan
		go func() { closeErr <- w.Close() }()
		if err := <-closeErr; err != nil {
			t.Fatal(err)
		}
		if !errors.Is(deleteErr, sessions.ErrClosed) {
			t.Fatalf("DeleteRange in a Scan's body during Close = %v, want ErrClosed", deleteErr)
		}
		if got := w.StoreStats(); got.Opens != 1 {
			t.Fatalf("StoreStats = %+v", got)
		}
		if err := free(dir); err != nil {
			t.Fatalf("the store was not let go: %v", err)
		}
	})
}

func TestCloseContextHonoursItsContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		w := sharedstore.New(dir, nil)
		if err := w.Write(entries("a", "1")); err != nil {
			t.Fatal(err)
		}
		inScan, endScan, scanned := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(scanned)
			for range w.Scan(nil, nil) {
				close(inScan)
				<-endScan
			}
		}()
		<-inScan
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := w.CloseContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CloseContext while a Scan holds the store = %v, want the deadline", err)
		}
		if err := w.Write(entries("b", "2")); !errors.Is(err, sessions.ErrClosed) {
			t.Fatalf("Write after CloseContext = %v, want ErrClosed", err)
		}
		close(endScan)
		<-scanned
		synctest.Wait() // the close goes on in the background
		if err := free(dir); err != nil {
			t.Fatalf("the store was not let go once the Scan ended: %v", err)
		}
	})
}
