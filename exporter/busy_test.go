package exporter_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// holdStore opens the store in dir read-write, as another process would,
// and returns how to let it go.
func holdStore(t *testing.T, dir string) func() {
	t.Helper()
	holder, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var released bool
	release := func() {
		if !released {
			released = true
			holder.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// keptSession records a change, so the session is kept, and then n
// observed records, one span each.
func keptSession(p *provider, n int) {
	_, c := p.span(context.Background(), "compile", spanbridge.Kind("compile"))
	c.SetAttributes(spanbridge.Changed())
	c.End()
	for i := range n {
		p.do("lookup", spanbridge.Kind("autotune"), attribute.Int("i", i))
	}
}

// spooledRecords counts the records (not session rows) the spool of dir
// holds, by merging a copy of it.
func spooledRecords(t *testing.T, dir string) int {
	t.Helper()
	cp := t.TempDir()
	if err := os.CopyFS(spool.Dir(cp), os.DirFS(spool.Dir(dir))); err != nil {
		t.Fatal(err)
	}
	n := 0
	_, err := spool.Merge(cp, func(es []sessions.Entry) error {
		for _, e := range es {
			if keys.IsRecord(e.Key) {
				n++
			}
		}
		return nil
	}, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBusyShutdownSpoolsEverything: a kept session with a large backlog
// shuts down, within 5 s, while another process holds the store: every
// record it accepted is in the spool when Shutdown returns, and a reader
// finds each exactly once after the holder lets go. (Under the race
// detector, which makes mapping a span ten times slower, the backlog is
// 10,000: 5 s cannot map 200,000, and spooling under it runs at about the
// rate SpoolTime allows for (16 MiB/s), so that only SpoolTime's fixed
// 100 ms is left as margin: 40,000 records missed the deadline once in a
// -race run beside other packages' tests.)
func TestBusyShutdownSpoolsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 spans")
	}
	n := 200_000
	if raceEnabled {
		n = 10_000
	}
	dir := filepath.Join(t.TempDir(), "store")
	release := holdStore(t, dir)
	p := newProvider(t, dir, exporter.WithMaxQueueSize(2*n))
	keptSession(p, n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err := p.Shutdown(ctx)
	took := time.Since(start)
	st := p.exp.Stats()
	t.Logf("Shutdown took %v: err=%v written=%d spooled=%d dropped=%d pending=%d", took, err, st.Written, st.Spooled, st.Dropped, st.Pending)
	if err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st.Dropped != 0 || st.Spooled != int64(n)+1 {
		t.Fatalf("spooled %d, dropped %d; want %d spooled", st.Spooled, st.Dropped, n+1)
	}
	if got := spooledRecords(t, dir); got != n+1 {
		t.Fatalf("the spool holds %d records, want %d", got, n+1)
	}
	release()
	// A reader merges the spool (OpenWait does, as the records command).
	r, done := readWaiting(t, dir)
	defer done()
	seen := map[int64]bool{}
	for rec, err := range r.All("autotune") {
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rec.Record.Attributes.Get("i")
		i := v.AsInt64()
		if seen[i] {
			t.Fatalf("record %d twice", i)
		}
		seen[i] = true
	}
	if len(seen) != n {
		t.Fatalf("a reader found %d records, want %d", len(seen), n)
	}
}

// heapSampler samples the heap in use every 10 ms, from a goroutine
// stopped at the end of the test, and keeps the largest sample.
type heapSampler struct{ peak atomic.Uint64 }

func sampleHeap(t *testing.T) *heapSampler {
	h := &heapSampler{}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.peak.Load() {
				h.peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(done); <-ended })
	return h
}

// MiB returns the largest heap in use sampled so far, in MiB.
func (h *heapSampler) MiB() uint64 { return h.peak.Load() >> 20 }

// spansFromEnv returns the number in the environment variable name, or def.
func spansFromEnv(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// TestBusyStoreKeepsMemoryBounded: while another process holds the store,
// a kept session's records go to the spool as they come, rather than
// queue in memory until the store is free. A program makes spans in
// bursts of 10,000, and before each burst waits (at most 5 s) for the
// exporter to take the last: the exporter takes them within its pressure
// bound instead of waiting 10 s for the store, drops none, and what waits
// in memory (queued spans and pending records) stays within the bound.
// OTELRECORDS_TEST_SPANS sets the number of spans (default 200,000), and
// OTELRECORDS_TEST_BURST the burst (OTELRECORDS_TEST_BURST=$N: every span
// at once, as fast as they can be made).
func TestBusyStoreKeepsMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 spans")
	}
	n := spansFromEnv(t, "OTELRECORDS_TEST_SPANS", 200_000)
	burst := spansFromEnv(t, "OTELRECORDS_TEST_BURST", 10_000)
	dir := filepath.Join(t.TempDir(), "store")
	release := holdStore(t, dir)
	// A queue that never drops: every span is either in memory or spooled.
	p := newProvider(t, dir, exporter.WithMaxQueueSize(2*n))
	runtime.GC()
	heap := sampleHeap(t)
	start := time.Now()
	keptSession(p, 0)
	var most int64 // the most records waiting in memory at a burst's end
	for made := 0; made < n; {
		for range min(burst, n-made) {
			p.do("lookup", spanbridge.Kind("autotune"), attribute.Int("i", made))
			made++
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			st := p.exp.Stats()
			most = max(most, st.Queued+st.Pending)
			if st.Queued <= int64(burst/2) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %d spans, %d wait in the queue 5 s on: the exporter is waiting for the busy store while they pile up (peak heap in use %d MiB; %+v)", made, st.Queued, heap.MiB(), st)
			}
			time.Sleep(time.Millisecond)
		}
	}
	made := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (peak heap in use %d MiB; %+v)", err, heap.MiB(), p.exp.Stats())
	}
	st := p.exp.Stats()
	t.Logf("%d spans in %v with the store held; peak heap in use %d MiB; most records waiting in memory %d; spooled %d, dropped %d",
		n, made.Round(time.Millisecond), heap.MiB(), most, st.Spooled, st.Dropped)
	if st.Dropped != 0 || st.Spooled != int64(n)+1 {
		t.Fatalf("spooled %d, dropped %d; want all %d spooled", st.Spooled, st.Dropped, n+1)
	}
	// A burst, the pressure bound, and the Recorder's SpillBytes of
	// records (about 40,000 of these), with room for a burst in flight.
	if bound := int64(2*burst + 8192 + 40_000); burst <= 10_000 && most > bound {
		t.Errorf("up to %d records waited in memory, want at most %d", most, bound)
	}
	release()
	r, done := readWaiting(t, dir)
	defer done()
	if got := countRecords(t, r, "autotune"); got != n {
		t.Fatalf("a reader found %d records, want %d", got, n)
	}
}

// countRecords counts the records of kind, failing on any error.
func countRecords(t *testing.T, r *sessions.Records, kind string) int {
	t.Helper()
	n := 0
	for _, err := range r.All(kind) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
