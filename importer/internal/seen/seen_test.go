package seen

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// refSeen is the seen table as a map of every fingerprint: what
// Table must answer, operation by operation.
type refSeen map[uint64]uint32

func (r refSeen) set(fp uint64, st State, at uint32) bool {
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

// TestSeenTableIsAMapOfSpans runs random sets and sweeps on a Table
// and on a map of every span, over fingerprints of one sender and of
// several (so that runs of slots meet and wrap around the table's end),
// through growth, shrinking and in-place removal, and checks that they
// answer alike: every set's report, every sweep's count, the state of
// every span ever set and of spans never set, and the count.
func TestSeenTableIsAMapOfSpans(t *testing.T) {
	grew, shrank := false, false
	for seed := range uint64(10) {
		r := rand.New(rand.NewPCG(seed, 35))
		tab := New(1 << 30)
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
				if got, want := tab.State(fp), wordState(ref[fp]); got != want {
					t.Fatalf("seed %d, %s: state of %x = %d, want %d", seed, what, fp, got, want)
				}
			}
			for range 20 {
				fp := r.Uint64() | 1
				if _, ok := ref[fp]; !ok && tab.State(fp) != None {
					t.Fatalf("seed %d, %s: a span never set has state %d", seed, what, tab.State(fp))
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
				st := State(1 + r.IntN(2))
				if got, want := tab.Set(fp, st, at), ref.set(fp, st, at); got != want {
					t.Fatalf("seed %d, step %d: set(%x) reported new %v, want %v", seed, step, fp, got, want)
				}
				if r.IntN(100) == 0 {
					at++
				}
			default:
				from := at - uint32(r.IntN(int(at)+1))
				before := len(tab.buckets)
				grew = grew || before > minBuckets
				if got, want := tab.Sweep(from), ref.sweep(from); got != want {
					t.Fatalf("seed %d, step %d: sweep(%d) forgot %d, want %d", seed, step, from, got, want)
				}
				shrank = shrank || (len(tab.buckets) < before && tab.n > 0)
				check("after a sweep", false)
			}
		}
		check("at the end", true)
		if got, want := tab.Sweep(at+1), ref.sweep(at+1); got != want {
			t.Fatalf("seed %d: the last sweep forgot %d, want %d", seed, got, want)
		}
		if tab.n != 0 || tab.Sweep(at+1) != 0 || tab.buckets != nil {
			t.Fatalf("seed %d: an emptied table holds on to %d buckets", seed, len(tab.buckets))
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
	tab := New(bound)
	r := rand.New(rand.NewPCG(1, 2))
	var fps []uint64
	for i := range 100000 {
		fp := r.Uint64() | 1
		fps = append(fps, fp)
		tab.Set(fp, Placed, uint32(i/100))
		if tab.Bytes() > bound*2/3 {
			t.Fatalf("after %d spans the table holds %d bytes, over two thirds of %d", i+1, tab.Bytes(), bound)
		}
	}
	if tab.forgotten == 0 || tab.forgotten+int64(tab.n) != int64(len(fps)) {
		t.Fatalf("forgotten %d, remembered %d, of %d set", tab.forgotten, tab.n, len(fps))
	}
	// The newest are remembered, the oldest not.
	for _, fp := range fps[len(fps)-tab.n/2:] {
		if tab.State(fp) != Placed {
			t.Fatal("a span of the last seconds was forgotten")
		}
	}
	for _, fp := range fps[:1000] {
		if tab.State(fp) != None {
			t.Fatal("a span of the first seconds is remembered past the bound")
		}
	}
}

// TestSeenTableGivesBackWhatABurstGrew checks that once a burst is swept,
// the table shrinks to about what is in use.
func TestSeenTableGivesBackWhatABurstGrew(t *testing.T) {
	tab := New(48 << 20) // importer.DefaultDedupBytes
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
		tab.Set(fp, Placed, at)
	}
	grown := len(tab.buckets)
	if n := tab.Sweep(1); n != 99000 {
		t.Fatalf("sweep forgot %d spans, want 99000", n)
	}
	if len(tab.buckets) > 4*minBuckets {
		t.Fatalf("the table kept %d buckets (grown to %d) for %d spans", len(tab.buckets), grown, tab.n)
	}
	for _, fp := range stay {
		if tab.State(fp) != Placed {
			t.Fatal("a span that stayed is lost after the table shrank")
		}
	}
}

// BenchmarkSeenTableMemory is the heap a remembered span costs, by the
// shape of its traces: 2^20 spans set in traces of 1, 10 and 100 spans,
// the heap measured after a collection, and the table's own count. The
// figures in DefaultDedupBytes's comment and docs/COLLECTOR.md are its
// output:
//
//	go test ./importer/internal/seen -run '^$' -bench SeenTableMemory -benchtime 1x
func BenchmarkSeenTableMemory(b *testing.B) {
	const n = 1 << 20
	ref := func(i, per int) Ref {
		tr := i / per
		return Ref{trace.TraceID{1, byte(tr), byte(tr >> 8), byte(tr >> 16)}, trace.SpanID{2, byte(i), byte(i >> 8), byte(i >> 16)}}
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
				tab := New(1 << 30)
				salt := tab.Salt("sender")
				for i := range n {
					tab.Set(tab.Fingerprint(salt, ref(i, per)), Placed, 1)
				}
				b.ReportMetric(float64(heap()-h0)/n, "B/span")
				b.ReportMetric(float64(tab.Bytes())/n, "table-B/span")
				runtime.KeepAlive(&tab)
			}
		})
	}
}
