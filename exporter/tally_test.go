package exporter_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// tallyServer runs a server's workload through a real SDK provider:
// requests on concurrent goroutines, each an implicit request span around
// a cache lookup of one of 7 keys; the first lookup of a key and a few
// more miss and fill (a change), the rest hit. It returns the store and
// the server's own count of hits and misses by key.
func tallyServer(t *testing.T, requests, changes int, final bool, opts ...exporter.Option) (*sessions.MemStore, map[string][2]int64) {
	t.Helper()
	mem := sessions.NewMemStore()
	exp, err := exporter.New("", append([]exporter.Option{exporter.WithStore(mem)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tracer := tp.Tracer("example.com/server")
	var mu sync.Mutex
	counts := map[string][2]int64{} // hits, misses
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < requests; i += workers {
				key := fmt.Sprint("k", i%7)
				miss := i < changes
				ctx, req := tracer.Start(context.Background(), "GET /kernel")
				result := "hit"
				if miss {
					result = "miss"
				}
				_, look := tracer.Start(ctx, "lookup", spanbridge.Record("cache", spanbridge.Observed(),
					attribute.String("cache.key", key), attribute.String("cache.result", result))...)
				look.End()
				if miss {
					_, fill := tracer.Start(ctx, "fill", spanbridge.Record("cache", spanbridge.Changed(), attribute.String("cache.key", key))...)
					fill.End()
				}
				req.End()
				mu.Lock()
				c := counts[key]
				if miss {
					c[1]++
				} else {
					c[0]++
				}
				counts[key] = c
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if final {
		// The one change, after every lookup.
		_, fill := tracer.Start(context.Background(), "fill", spanbridge.Record("cache", spanbridge.Changed(), attribute.String("cache.key", "k0"))...)
		fill.End()
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return mem, counts
}

func onlySession(t *testing.T, r *sessions.Records) sessions.SessionID {
	t.Helper()
	var ids []sessions.SessionID
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 1 {
		t.Fatalf("%d sessions, want 1", len(ids))
	}
	return ids[0]
}

// byKey sums a tally's entries of kind cache, name lookup, by key: count
// and hits.
func byKey(tl tallies.Tally) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, e := range tl.Entries {
		if e.Kind != "cache" || e.Name != "lookup" {
			continue
		}
		v, _ := e.Key.Get("cache.key")
		c := out[v.AsString()]
		c[0] += e.Outcomes["hit"]
		c[1] += e.Count
		out[v.AsString()] = c
	}
	return out
}

// A server kept by trace: 10 requests change, 390 hit, on 7 keys. No
// record of a hit is kept, and the tally counts every one, by key.
func TestTallyOfAServerKeptByTrace(t *testing.T) {
	mem, counts := tallyServer(t, 400, 10, false, exporter.WithKeepBy(exporter.KeepByTrace))
	r := sessions.NewRecords(mem.Reopen())
	id := onlySession(t, r)
	tl, ok, err := tallies.Read(r, id)
	if err != nil || !ok {
		t.Fatalf("Tally: %v, %v", ok, err)
	}
	got := byKey(tl)
	var total int64
	for k, c := range counts {
		if got[k][0] != c[0] || got[k][1] != c[0] {
			t.Errorf("%s: tallied %d lookups, %d hits; the server hit it %d times", k, got[k][1], got[k][0], c[0])
		}
		total += c[0]
	}
	if total != 390 {
		t.Fatalf("the server hit %d times, want 390", total)
	}
	var marks int64
	for _, e := range tl.Entries {
		if e.Kind == sessions.MarksKind && e.Name == "GET /kernel" {
			marks += e.Count
		}
	}
	if marks != 390 {
		t.Errorf("tallied %d request marks, want the 390 requests let go", marks)
	}
}

// Kept by session with a budget too small to hold what came before the
// first change: what the budget pushed out is tallied, and kept plus
// tallied is every lookup. The same run without its change writes
// nothing.
func TestTallyOfEvictedRecordsBeforeTheFirstChange(t *testing.T) {
	opts := []exporter.Option{exporter.WithPendingBudget(4000), exporter.WithMarks(exporter.MarksNone)}
	warm, _ := tallyServer(t, 200, 0, false, opts...)
	if n := warm.Len(); n != 0 {
		t.Fatalf("a warm run wrote %d entries", n)
	}
	mem, _ := tallyServer(t, 200, 0, true, opts...)
	r := sessions.NewRecords(mem.Reopen())
	id := onlySession(t, r)
	tl, ok, err := tallies.Read(r, id)
	if err != nil || !ok {
		t.Fatalf("Tally: %v, %v", ok, err)
	}
	kept := 0
	for kr, err := range r.All("cache") {
		if err != nil {
			t.Fatal(err)
		}
		if kr.Record.Name == "lookup" {
			kept++
		}
	}
	var tallied int64
	for _, c := range byKey(tl) {
		tallied += c[1]
	}
	if tallied == 0 || kept == 0 || tallied+int64(kept) != 200 {
		t.Fatalf("kept %d + tallied %d lookups, want 200, some of each", kept, tallied)
	}
}

// On a Badger store: each kept session has its tally; a prune takes the
// pruned session's with its row and leaves the kept one's.
func TestTallyGoesWithItsSessionAtAPrune(t *testing.T) {
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "store")
	for range 2 {
		exp, err := exporter.New(dir, exporter.WithKeepBy(exporter.KeepByTrace))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
		tracer := tp.Tracer("t")
		for i := range 5 {
			_, s := tracer.Start(context.Background(), "lookup", spanbridge.Record("cache", attribute.String("cache.key", "k"))...)
			s.End()
			if i == 4 {
				_, s := tracer.Start(context.Background(), "fill", spanbridge.Record("cache", spanbridge.Changed())...)
				s.End()
			}
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := sessions.NewRecords(st)
	var ids []sessions.SessionID
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	for _, id := range ids {
		if tl, ok, err := tallies.Read(r, id); err != nil || !ok || tl.Count() != 5 {
			t.Fatalf("session %d: tally %+v, %v, %v; want its 5 lookups", id, tl, ok, err)
		}
	}
	if n, err := r.Prune(1); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if _, ok, _ := tallies.Read(r, ids[0]); ok {
		t.Error("the pruned session's tally is left")
	}
	if _, ok, _ := tallies.Read(r, ids[1]); !ok {
		t.Error("the kept session's tally went")
	}
}

// A kept session whose spans are all implicit marks let go still has
// them written within TallyEvery: the loop is woken to hand the counts
// over, though no span reaches it.
func TestTallyOfMarksLetGoIsWrittenWhileRunning(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	mem := sessions.NewMemStore()
	exp, err := exporter.New("", exporter.WithStore(mem), exporter.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer("t")
	_, s := tracer.Start(context.Background(), "fill", spanbridge.Record("cache", spanbridge.Changed())...)
	s.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the loop's timer, armed by the fill, has fired
	mu.Lock()
	now = now.Add(recorder.DefaultTallyEvery + time.Second)
	mu.Unlock()
	for range 50 {
		_, s := tracer.Start(context.Background(), "GET /")
		s.End()
	}
	r := sessions.NewRecords(mem)
	id := onlySession(t, r)
	deadline := time.Now().Add(10 * time.Second)
	for {
		tl, _, err := tallies.Read(r, id)
		if err != nil {
			t.Fatal(err)
		}
		if tl.Count() == 50 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tally %+v: the 50 marks let go not written without a flush", tl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
