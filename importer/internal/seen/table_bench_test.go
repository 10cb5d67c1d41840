package seen

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// BenchmarkSeenTableLookups is what a lookup costs in a table far larger
// than the caches, of a million and of four million spans: the state of
// a span remembered and of one not in a loop of lookups that overlap,
// that of a span remembered in a chain of lookups that each wait for the
// one before, a new span set (swept out again after the timed loop, so
// the table keeps its size; run it with a -benchtime of at most 20000x),
// and a LookAhead of batches of 256 spans whose parents are remembered,
// in ns a span:
//
//	go test ./importer/internal/seen -run '^$' -bench SeenTableLookups -benchtime 20000x
func BenchmarkSeenTableLookups(b *testing.B) {
	for _, n := range []int{1_000_000, 4_000_000} {
		r := rand.New(rand.NewPCG(uint64(n), 7))
		tab := New(1 << 30)
		salt := tab.Salt("sender")
		refs := make([]Ref, n)
		fps := make([]uint64, n)
		for i := range refs {
			var ref Ref
			for j := range ref.Trace {
				ref.Trace[j] = byte(r.Uint32())
			}
			for j := range ref.Span {
				ref.Span[j] = byte(r.Uint32())
			}
			refs[i], fps[i] = ref, tab.Fingerprint(salt, ref)
			tab.Set(fps[i], Placed, 5)
		}
		size := fmt.Sprintf("spans-%dM", n/1_000_000)
		b.Run(size+"/state-present", func(b *testing.B) {
			st := State(0)
			for i := range b.N {
				st |= tab.State(fps[int(uint64(i)*0x9E3779B97F4A7C15>>33)%n])
			}
			if st != Placed {
				b.Fatal("a remembered span is not placed")
			}
		})
		b.Run(size+"/state-absent", func(b *testing.B) {
			st := State(0)
			for i := range b.N {
				st |= tab.State(uint64(i)*0x9E3779B97F4A7C15 | 1)
			}
			b.StopTimer()
			if st != None {
				b.Fatal("a span never set is known")
			}
		})
		// The chained lookups each wait for the one before (the next
		// fingerprint depends on the word it read), as a lookup between
		// a span's other work does: the latency of one, not the rate of
		// many overlapping. (An absent span's answer is known from the
		// branches taken, not the words read: a chain of them overlaps.)
		b.Run(size+"/state-present-chained", func(b *testing.B) {
			j := 0
			for i := range b.N {
				st := tab.State(fps[j])
				j = int((uint64(i)+uint64(st))*0x9E3779B97F4A7C15>>33) % n
			}
		})
		b.Run(size+"/set-new", func(b *testing.B) {
			for i := range b.N {
				tab.Set(uint64(i+1)*0xD1B54A32D192ED03|1, Placed, 1)
			}
			b.StopTimer()
			tab.Sweep(2)
			if tab.Len() != n {
				b.Fatalf("the table holds %d spans, want %d", tab.Len(), n)
			}
		})
		b.Run(size+"/lookahead", func(b *testing.B) {
			const batch = 256
			var look LookAhead
			kids := make([]trace.SpanID, batch)
			for i := range kids {
				kids[i] = trace.SpanID{1, byte(i), byte(i >> 8), 9, 9, 9, 9, 9}
			}
			b.ResetTimer()
			for i := range b.N {
				at := int(uint64(i)*0x9E3779B97F4A7C15>>33) % (n - batch)
				look.LookUp(&tab, salt, batch, func(j int) (trace.TraceID, trace.SpanID, trace.SpanID) {
					p := refs[at+j]
					return p.Trace, kids[j], p.Span
				})
				for range batch {
					if _, st, parent := look.Next(); st != None || parent != Placed {
						b.Fatal("a batch's span or parent is not what was set")
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/span")
		})
		b.Logf("%s: the table holds %d bytes, %.1f a span", size, tab.Bytes(), float64(tab.Bytes())/float64(n))
	}
}
