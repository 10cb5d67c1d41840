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

// refSeen is the seen set as a map of every span: what seenSet must
// answer, operation by operation.
type refSeen map[spanRef]seen

func (r refSeen) set(k spanRef, st spanState, at uint32) bool {
	_, ok := r[k]
	r[k] = seen{st, at}
	return !ok
}

func (r refSeen) sweep(from uint32) int {
	n := 0
	for k, v := range r {
		if v.at < from {
			delete(r, k)
			n++
		}
	}
	return n
}

// TestSeenSetIsAMapOfSpans runs random sets and sweeps on a seenSet and
// on a map of every span, over traces of 1 to 300 spans (inline, in
// chunks, and past maxTraceSpans in the map by span), and checks that
// they answer alike: every set's report, every sweep's count, the state
// of every span ever set and of spans never set, and the count.
func TestSeenSetIsAMapOfSpans(t *testing.T) {
	sawBig, sawChunks := false, false
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 35))
		var s seenSet
		ref := refSeen{}
		var traces []trace.TraceID
		var sizes []int
		var all []spanRef
		at := uint32(0)
		check := func(what string) {
			t.Helper()
			if s.len() != len(ref) {
				t.Fatalf("seed %d, %s: len %d, want %d", seed, what, s.len(), len(ref))
			}
			for _, k := range all {
				if got, want := s.state(k), ref[k].state; got != want {
					t.Fatalf("seed %d, %s: state of %v = %d, want %d", seed, what, k, got, want)
				}
			}
			for range 20 {
				k := spanRef{traces[r.IntN(len(traces))], trace.SpanID{0xee, byte(r.Uint32())}}
				if _, ok := ref[k]; !ok && s.state(k) != stateNone {
					t.Fatalf("seed %d, %s: a span never set has state %d", seed, what, s.state(k))
				}
			}
		}
		for step := range 6000 {
			sawBig = sawBig || len(s.big) > 0
			sawChunks = sawChunks || s.used > 0
			switch x := r.IntN(200); {
			case x < 3 || len(traces) == 0:
				var id trace.TraceID
				id[0], id[1], id[2] = byte(seed), byte(step), byte(step>>8)
				traces = append(traces, id)
				sizes = append(sizes, []int{1, 2, 3, 10, 64, 65, 300}[r.IntN(7)])
			case x < 197:
				i := r.IntN(len(traces))
				k := spanRef{traces[i], trace.SpanID{1, byte(r.IntN(sizes[i])), byte(r.IntN(sizes[i]) >> 8)}}
				if sizes[i] > 255 {
					n := r.IntN(sizes[i])
					k.span = trace.SpanID{1, byte(n), byte(n >> 8)}
				}
				st := spanState(1 + r.IntN(2))
				if got, want := s.set(k, st, at), ref.set(k, st, at); got != want {
					t.Fatalf("seed %d, step %d: set(%v) reported new %v, want %v", seed, step, k, got, want)
				}
				all = append(all, k)
				if r.IntN(50) == 0 {
					at++
				}
			default:
				from := at - uint32(r.IntN(int(at)+1))
				if got, want := s.sweep(from), ref.sweep(from); got != want {
					t.Fatalf("seed %d, step %d: sweep(%d) forgot %d, want %d", seed, step, from, got, want)
				}
				check("after a sweep")
			}
		}
		check("at the end")
		if got, want := s.sweep(at+1), ref.sweep(at+1); got != want {
			t.Fatalf("seed %d: the last sweep forgot %d, want %d", seed, got, want)
		}
		if s.len() != 0 || s.traces != nil || s.chunks != nil || s.big != nil {
			t.Fatalf("seed %d: an emptied set holds on to %d traces, %d chunks, %d big", seed, len(s.traces), len(s.chunks), len(s.big))
		}
	}
	if !sawBig || !sawChunks {
		t.Fatalf("the runs never put spans in chunks (%v) or in the map by span (%v)", sawChunks, sawBig)
	}
}

// TestSeenSetGivesBackWhatABurstGrew checks that once a burst of traces is
// swept, the slab of chunks shrinks to about what is in use.
func TestSeenSetGivesBackWhatABurstGrew(t *testing.T) {
	var s seenSet
	for i := range 10000 {
		at := uint32(0)
		if i < 100 {
			at = 5 // the traces that stay
		}
		for j := range 10 {
			s.set(spanRef{trace.TraceID{1, byte(i), byte(i >> 8)}, trace.SpanID{2, byte(j)}}, statePlaced, at)
		}
	}
	grown := len(s.chunks)
	if n := s.sweep(1); n != 9900*10 {
		t.Fatalf("sweep forgot %d spans, want %d", n, 9900*10)
	}
	if s.len() != 1000 || s.used != 100 {
		t.Fatalf("%d spans in %d chunks remembered, want 1000 in 100", s.len(), s.used)
	}
	if len(s.chunks) > 4*s.used {
		t.Fatalf("the slab kept %d chunks (grown to %d) for %d in use", len(s.chunks), grown, s.used)
	}
	for i := range 100 {
		for j := range 10 {
			if st := s.state(spanRef{trace.TraceID{1, byte(i), byte(i >> 8)}, trace.SpanID{2, byte(j)}}); st != statePlaced {
				t.Fatalf("trace %d span %d: state %d after compaction", i, j, st)
			}
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
	r2.im.mu.Lock()
	defer r2.im.mu.Unlock()
	n := 0
	for _, rs := range r2.im.sessions {
		n += rs.seen.len()
	}
	for _, p := range r2.im.parked {
		n += p.seen.len()
	}
	if n != 50 || r2.im.seen != n {
		t.Fatalf("the seen sets hold %d spans (want 50), the Importer counts %d", n, r2.im.seen)
	}
}

// BenchmarkSeenSetMemory is the heap a remembered span costs, by the shape
// of its traces: 2^20 spans set in traces of 1, 10 and 100 spans, in the
// set by trace and in a map by span (what the set replaced), the heap
// measured after a collection. The figures in maxSeen's comment and
// docs/COLLECTOR.md are its output:
//
//	go test ./exporter -run '^$' -bench SeenSetMemory -benchtime 1x
func BenchmarkSeenSetMemory(b *testing.B) {
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
		b.Run(fmt.Sprintf("by-trace-%d", per), func(b *testing.B) {
			for b.Loop() {
				h0 := heap()
				var s seenSet
				for i := range n {
					s.set(ref(i, per), statePlaced, 1)
				}
				b.ReportMetric(float64(heap()-h0)/n, "B/span")
				runtime.KeepAlive(&s)
			}
		})
		b.Run(fmt.Sprintf("by-span-%d", per), func(b *testing.B) {
			for b.Loop() {
				h0 := heap()
				m := refSeen{}
				for i := range n {
					m.set(ref(i, per), statePlaced, 1)
				}
				b.ReportMetric(float64(heap()-h0)/n, "B/span")
				runtime.KeepAlive(m)
			}
		})
	}
}
