package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// refSeen is the seen table as a map of every fingerprint: what
// seenTable must answer, operation by operation.
type refSeen map[uint64]uint32

func (r refSeen) set(fp uint64, st spanState, at uint32) bool {
	_, ok := r[fp]
	r[fp] = word(st, at)
	return !ok
}

func (r refSeen) sweep(from uint32) int {
	n := 0
	for k, w := range r {
		if wordSecond(w) < from {
			delete(r, k)
			n++
		}
	}
	return n
}

// TestSeenTableIsAMapOfSpans runs random sets and sweeps on a seenTable
// and on a map of every span, over fingerprints of one sender and of
// several (so that runs of slots meet and wrap around the table's end),
// through growth, shrinking and in-place removal, and checks that they
// answer alike: every set's report, every sweep's count, the state of
// every span ever set and of spans never set, and the count.
func TestSeenTableIsAMapOfSpans(t *testing.T) {
	grew, shrank := false, false
	for seed := range uint64(10) {
		r := rand.New(rand.NewPCG(seed, 35))
		tab := newSeenTable(1 << 30)
		ref := refSeen{}
		var all []uint64
		at := uint32(0)
		check := func(what string, every bool) {
			t.Helper()
			if tab.n != len(ref) {
				t.Fatalf("seed %d, %s: n %d, want %d", seed, what, tab.n, len(ref))
			}
			some := all
			if !every && len(some) > 500 {
				some = some[r.IntN(len(some)-500):][:500]
			}
			for _, fp := range some {
				if got, want := tab.state(fp), wordState(ref[fp]); got != want {
					t.Fatalf("seed %d, %s: state of %x = %d, want %d", seed, what, fp, got, want)
				}
			}
			for range 20 {
				fp := r.Uint64() | 1
				if _, ok := ref[fp]; !ok && tab.state(fp) != stateNone {
					t.Fatalf("seed %d, %s: a span never set has state %d", seed, what, tab.state(fp))
				}
			}
		}
		for step := range 12000 {
			switch x := r.IntN(1000); {
			case x < 995:
				var fp uint64
				if len(all) > 0 && r.IntN(4) == 0 {
					fp = all[r.IntN(len(all))]
				} else {
					// Clustered fingerprints: many share a home.
					fp = r.Uint64()>>uint(r.IntN(8))<<uint(r.IntN(8)) | 1
					all = append(all, fp)
				}
				st := spanState(1 + r.IntN(2))
				if got, want := tab.set(fp, st, at), ref.set(fp, st, at); got != want {
					t.Fatalf("seed %d, step %d: set(%x) reported new %v, want %v", seed, step, fp, got, want)
				}
				if r.IntN(100) == 0 {
					at++
				}
			default:
				from := at - uint32(r.IntN(int(at)+1))
				before := len(tab.fps)
				grew = grew || before > minSeenSlots
				if got, want := tab.sweep(from), ref.sweep(from); got != want {
					t.Fatalf("seed %d, step %d: sweep(%d) forgot %d, want %d", seed, step, from, got, want)
				}
				shrank = shrank || (len(tab.fps) < before && tab.n > 0)
				check("after a sweep", false)
			}
		}
		check("at the end", true)
		if got, want := tab.sweep(at+1), ref.sweep(at+1); got != want {
			t.Fatalf("seed %d: the last sweep forgot %d, want %d", seed, got, want)
		}
		if tab.n != 0 || tab.sweep(at+1) != 0 || tab.fps != nil {
			t.Fatalf("seed %d: an emptied table holds on to %d slots", seed, len(tab.fps))
		}
	}
	if !grew || !shrank {
		t.Fatalf("the runs never grew the table (%v) or shrank it (%v)", grew, shrank)
	}
}

// TestSeenTableStaysWithinItsBytes fills a table of a small bound with
// spans of advancing seconds: it never holds more than its bound, and
// what it forgets to stay there is the oldest, counted.
func TestSeenTableStaysWithinItsBytes(t *testing.T) {
	const bound = 96 << 10
	tab := newSeenTable(bound)
	r := rand.New(rand.NewPCG(1, 2))
	var fps []uint64
	for i := range 100000 {
		fp := r.Uint64() | 1
		fps = append(fps, fp)
		tab.set(fp, statePlaced, uint32(i/100))
		if tab.bytes() > bound*2/3 {
			t.Fatalf("after %d spans the table holds %d bytes, over two thirds of %d", i+1, tab.bytes(), bound)
		}
	}
	if tab.forgotten == 0 || tab.forgotten+int64(tab.n) != int64(len(fps)) {
		t.Fatalf("forgotten %d, remembered %d, of %d set", tab.forgotten, tab.n, len(fps))
	}
	// The newest are remembered, the oldest not.
	for _, fp := range fps[len(fps)-tab.n/2:] {
		if tab.state(fp) != statePlaced {
			t.Fatal("a span of the last seconds was forgotten")
		}
	}
	for _, fp := range fps[:1000] {
		if tab.state(fp) != stateNone {
			t.Fatal("a span of the first seconds is remembered past the bound")
		}
	}
}

// TestSeenTableGivesBackWhatABurstGrew checks that once a burst is swept,
// the table shrinks to about what is in use.
func TestSeenTableGivesBackWhatABurstGrew(t *testing.T) {
	tab := newSeenTable(DefaultDedupBytes)
	r := rand.New(rand.NewPCG(3, 4))
	var stay []uint64
	for i := range 100000 {
		at := uint32(0)
		if i < 1000 {
			at = 5 // the spans that stay
		}
		fp := r.Uint64() | 1
		if at == 5 {
			stay = append(stay, fp)
		}
		tab.set(fp, statePlaced, at)
	}
	grown := len(tab.fps)
	if n := tab.sweep(1); n != 99000 {
		t.Fatalf("sweep forgot %d spans, want 99000", n)
	}
	if len(tab.fps) > 4*minSeenSlots {
		t.Fatalf("the table kept %d slots (grown to %d) for %d spans", len(tab.fps), grown, tab.n)
	}
	for _, fp := range stay {
		if tab.state(fp) != statePlaced {
			t.Fatal("a span that stayed is lost after the table shrank")
		}
	}
}

// TestImportLargeTraceTakenOnce sends a trace of 300 spans, more than a
// trace keeps beside its entry (maxTraceSpans): retried whole, then half
// of it again in the reverse order, every span is stored once and
// recognised every other time.
func TestImportLargeTraceTakenOnce(t *testing.T) {
	r := newImportRig(t, ImporterConfig{})
	const n = 300
	batch := make([]ImportedSpan, n)
	for i := range batch {
		batch[i] = span("step", 1, 0, i, changed("step")...)
		batch[i].SpanID = trace.SpanID{9, byte(i >> 8), byte(i), 1}
		if i > 0 {
			batch[i].ParentSpanID = batch[0].SpanID
		}
	}
	if res := r.send(node, batch...); res.Duplicates != 0 {
		t.Fatalf("the first send: %+v, want no duplicates", res)
	}
	if res := r.send(node, batch...); res.Duplicates != n {
		t.Fatalf("the retry: %+v, want %d duplicates", res, n)
	}
	half := slices.Clone(batch[n/2:])
	slices.Reverse(half)
	if res := r.send(node, half...); res.Duplicates != len(half) {
		t.Fatalf("half again, reversed: %+v, want %d duplicates", res, len(half))
	}
	if got := len(r.records()); got != n {
		t.Fatalf("%d records stored, want %d", got, n)
	}
	if st := r.im.Stats(); st.SeenSpans != n {
		t.Fatalf("%d spans remembered, want %d", st.SeenSpans, n)
	}
}

// scanFailingStore fails the n-th Scan of one session's records of a
// kind (a range under the kind's prefix that names a session), once: a
// recovery cut short halfway through the sessions it reads back.
type scanFailingStore struct {
	*sessions.MemStore
	prefix []byte
	n      int
}

func (s *scanFailingStore) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	if bytes.HasPrefix(start, s.prefix) && len(start) >= len(s.prefix)+8 {
		if s.n--; s.n == 0 {
			return func(yield func(sessions.Entry, error) bool) {
				yield(sessions.Entry{}, errors.New("a test's read error"))
			}
		}
	}
	return s.MemStore.Scan(start, end)
}

// A recovery that fails after reading back one session, and is tried
// again at the next Import, counts each session's remembered spans once:
// the count the Importer keeps is the sum of its sets.
func TestImportRecoveryTriedAgainCountsOnce(t *testing.T) {
	mem := sessions.NewMemStore()
	fake := clock.NewFake(rigNow)
	r1 := newImportRigOn(t, mem, fake, ImporterConfig{})
	other := []attribute.KeyValue{attribute.String("service.name", "tester"), attribute.String("service.instance.id", "t-1")}
	r1.send(node, spansOf(7, 20)...)
	r1.send(other, spansOf(8, 30)...)
	fake.Advance(3 * time.Second) // the crash: r1 is left as it is
	store := &scanFailingStore{MemStore: mem, prefix: []byte(keys.Namespace("artifact")), n: 2}
	r2 := newImportRigOn(t, store, fake, ImporterConfig{})
	if _, err := r2.im.Import(context.Background(), ImportBatch{Resource: node, Spans: spansOf(7, 1)}); err == nil {
		t.Fatal("the first Import recovered through a failing read")
	}
	if res := r2.send(node, spansOf(7, 20)...); res.Duplicates != 20 {
		t.Fatalf("the batch sent again after the recovery: %+v, want all 20 recognised", res)
	}
	if n := r2.im.Stats().SeenSpans; n != 50 {
		t.Fatalf("the seen table holds %d spans, want 50", n)
	}
}

// BenchmarkSeenTableMemory is the heap a remembered span costs, by the
// shape of its traces: 2^20 spans set in traces of 1, 10 and 100 spans,
// the heap measured after a collection, and the table's own count. The
// figures in DefaultDedupBytes's comment and docs/COLLECTOR.md are its
// output:
//
//	go test ./exporter -run '^$' -bench SeenTableMemory -benchtime 1x
func BenchmarkSeenTableMemory(b *testing.B) {
	const n = 1 << 20
	ref := func(i, per int) spanRef {
		tr := i / per
		return spanRef{trace.TraceID{1, byte(tr), byte(tr >> 8), byte(tr >> 16)}, trace.SpanID{2, byte(i), byte(i >> 8), byte(i >> 16)}}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, per := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("traces-of-%d", per), func(b *testing.B) {
			for b.Loop() {
				h0 := heap()
				tab := newSeenTable(1 << 30)
				salt := tab.salt("sender")
				for i := range n {
					tab.set(tab.fingerprint(salt, ref(i, per)), statePlaced, 1)
				}
				b.ReportMetric(float64(heap()-h0)/n, "B/span")
				b.ReportMetric(float64(tab.bytes())/n, "table-B/span")
				runtime.KeepAlive(&tab)
			}
		})
	}
}
