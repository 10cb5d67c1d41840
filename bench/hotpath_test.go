//go:build bench

package bench

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
)

// The figures of this file count what a span costs the whole process:
// process CPU time (getrusage RUSAGE_SELF, every thread: the caller, a
// processor's background goroutines, Badger's, the garbage collector's)
// from the first span to the return of the provider's ForceFlush, per
// span. A processor's queue would otherwise carry part of the work of the
// spans timed past the clock, and a processor would look the cheaper the
// slower its background. The reference is the SDK's BatchSpanProcessor
// into an exporter that discards, WithBlocking, so that its queue never
// drops a span: both sides handle every span they are given.

// provider is a TracerProvider a figure measures, and our exporter on it
// (nil for a reference).
type provider struct {
	name string
	make func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter)
}

// bsp is the reference of figures 2, 3 and 4: a BatchSpanProcessor whose
// queue never drops, into an exporter that discards.
var bsp = provider{"bsp", func(*testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
	p := sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter(), sdktrace.WithBlocking())
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p)), nil
}}

// bspBadger is figure 3's lower bound of persisting: the same
// BatchSpanProcessor into an exporter that encodes every span with the
// library's mapping and encoder and writes it to raw Badger, with the
// store's options, one WriteBatch per batch of spans.
var bspBadger = provider{"bspbadger", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
	db, err := badger.Open(workload.BadgerOptions(filepath.Join(b.TempDir(), "store"), false))
	if err != nil {
		b.Fatal(err)
	}
	p := sdktrace.NewBatchSpanProcessor(workload.NewRawBadger(db), sdktrace.WithBlocking())
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p)), nil
}}

// warm is ours on a session never kept: the spans have a kind but no
// records.effect=changed, so every record is held in memory, within the
// pending budget, and nothing is written (a long-running server on a warm
// environment).
var warm = provider{"warm", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
	exp, err := exporter.New(filepath.Join(b.TempDir(), "store"), exporter.WithLevel(sessions.LevelBasic))
	if err != nil {
		b.Fatal(err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp)), exp
}}

// kept is ours on a kept session at level basic: every span is written to
// the store.
var kept = provider{"kept", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
	return keptProvider(b, filepath.Join(b.TempDir(), "store"), nil, exporter.WithLevel(sessions.LevelBasic))
}}

// settle collects the garbage the previous sub-benchmark left (ours leaves
// a lot: every span it wrote), so that the next one does not pay for it.
func settle() {
	runtime.GC()
	runtime.GC()
}

// startCPU starts a sub-benchmark's clock from a collected heap, counting
// allocations, and returns the process's CPU time at its start.
func startCPU(b *testing.B) time.Duration {
	settle()
	b.ReportAllocs()
	b.ResetTimer()
	return processCPU(b)
}

// processCPU returns the process's CPU time so far.
func processCPU(b *testing.B) time.Duration {
	cpu, err := workload.ProcessCPU()
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// spanOptions are the start options the figures' spans cycle through:
// records that differ as in a real program, with no attribute built in
// the loop.
var spanOptions = workload.Options(1024)

// endSpans ends the spans [from, to) on tr.
func endSpans(ctx context.Context, tr trace.Tracer, from, to int) {
	for i := from; i < to; i++ {
		workload.Span(ctx, tr, spanOptions[i%len(spanOptions)])
	}
}

// emptyProcessor is a SpanProcessor whose every method does nothing.
type emptyProcessor struct{}

func (emptyProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (emptyProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (emptyProcessor) Shutdown(context.Context) error                  { return nil }
func (emptyProcessor) ForceFlush(context.Context) error                { return nil }

// turnSide is a provider that takes turns with others within one
// benchmark (figures 1 and 2), and the process CPU of its turns.
type turnSide struct {
	name string
	tp   *sdktrace.TracerProvider
	tr   trace.Tracer
	cpu  time.Duration
}

// turn ends the spans [from, to) on s and flushes its provider, adding
// the process CPU that took to s's.
func (s *turnSide) turn(b *testing.B, ctx context.Context, from, to int) {
	cpu := processCPU(b)
	endSpans(ctx, s.tr, from, to)
	if err := s.tp.ForceFlush(ctx); err != nil {
		b.Fatal(err)
	}
	s.cpu += processCPU(b) - cpu
}

// reportTurns reports each side's process CPU a span, as
// <name>-cpu-ns/op.
func reportTurns(b *testing.B, sides []turnSide) {
	for _, s := range sides {
		b.ReportMetric(float64(s.cpu.Nanoseconds())/float64(b.N), s.name+"-cpu-ns/op")
	}
}

// levelOffChunk is how many spans BenchmarkLevelOff ends on one provider
// before it turns to the next.
const levelOffChunk = 1000

// BenchmarkLevelOff is figure 1: ours at level off, plugged in with
// (*Exporter).Register (so it is not on the provider at all), against a
// provider with no processor; beside them, for explanation, a processor
// that does nothing (the floor of any registered processor: the SDK
// snapshots every ended span for it), ours at level off registered with
// WithSpanProcessor, and a second provider with no processor: the A/A
// control, which shows how far two identical providers differ here.
//
// The target is 3%, less than what the machine's load moves a figure from
// one second to the next, so the providers take turns within one run:
// levelOffChunk spans on each, in a rotating order, each chunk's process
// CPU (flush included) added to its provider's. b.N is the spans per
// provider; the metrics are <provider>-cpu-ns/op.
func BenchmarkLevelOff(b *testing.B) {
	off, err := exporter.New(filepath.Join(b.TempDir(), "off"), exporter.WithLevel(sessions.LevelOff))
	if err != nil {
		b.Fatal(err)
	}
	offTP := sdktrace.NewTracerProvider()
	off.Register(offTP)
	offProc, err := exporter.New(filepath.Join(b.TempDir(), "offproc"), exporter.WithLevel(sessions.LevelOff))
	if err != nil {
		b.Fatal(err)
	}
	sides := []turnSide{
		{name: "none", tp: sdktrace.NewTracerProvider()},
		// The A/A control: a second provider identical to none, so the
		// table shows how far two of the same differ on this machine.
		{name: "none2", tp: sdktrace.NewTracerProvider()},
		{name: "off", tp: offTP},
		{name: "empty", tp: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(emptyProcessor{}))},
		{name: "offproc", tp: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(offProc))},
	}
	ctx := context.Background()
	for i := range sides {
		defer checkShutdown(b, sides[i].tp)
		sides[i].tr = sides[i].tp.Tracer("bench")
	}
	defer func() {
		if err := off.Shutdown(ctx); err != nil { // not on its provider: tp.Shutdown leaves it
			b.Error(err)
		}
	}()
	settle()
	b.ResetTimer()
	for c, from := 0, 0; from < b.N; c, from = c+1, from+levelOffChunk {
		to := min(from+levelOffChunk, b.N)
		for j := range sides {
			sides[(c+j)%len(sides)].turn(b, ctx, from, to)
		}
	}
	b.StopTimer()
	reportTurns(b, sides)
	if st := off.Stats(); st.Written+st.Held+st.Queued != 0 {
		b.Fatalf("at level off the exporter recorded something: %+v", st)
	}
}

// BenchmarkSpanCPU is figures 2 and 3: the process CPU per span of the
// BatchSpanProcessor (the reference), of the same into raw Badger writing
// every record (the lower bound of persisting), of ours on a warm session
// (figure 2) and of ours on a kept one (figure 3). A span has 4 attributes
// (records.kind and a string, an int and a bool). Each sub-benchmark ends
// b.N spans from a collected heap, then flushes the provider, inside the
// clock: cpu-ns/op and allocs/op count everything the process did for
// those spans. Run it with a fixed -benchtime (200000x), the same for all.
func BenchmarkSpanCPU(b *testing.B) {
	for _, p := range []provider{bsp, bspBadger, warm, kept} {
		b.Run(p.name, func(b *testing.B) {
			tp, exp := p.make(b)
			defer checkShutdown(b, tp)
			tr := tp.Tracer("bench")
			ctx := context.Background()
			cpu := startCPU(b)
			endSpans(ctx, tr, 0, b.N)
			if err := tp.ForceFlush(ctx); err != nil {
				b.Fatal(err)
			}
			cpu = processCPU(b) - cpu
			b.StopTimer()
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			reportDropped(b, exp)
			if p.name == warm.name {
				if st := exp.Stats(); st.SessionsKept != 0 || st.Written != 0 {
					b.Fatalf("the warm session was kept: %+v", st)
				}
			}
		})
	}
}

// turnChunk is how many spans BenchmarkSpanTurns ends on one provider
// before it turns to the next.
const turnChunk = 20_000

// BenchmarkSpanTurns is figure 2 again, measured as figure 1 is: the BSP,
// a second BSP (the A/A control) and ours on a warm session take turns of
// turnChunk spans in one process, each turn's process CPU (its flush
// included) added to its provider's, in ABBA order (forwards, then
// backwards), so that each provider runs as often before as after each
// other and a spell of load on the shared machine falls on all three.
// BenchmarkSpanCPU runs each provider once, for about half a second, and
// its rounds' ratios spread over half their median on these machines;
// these spread over a few hundredths, and the control says how far two
// identical providers differ. It runs twice: with the process's Ps
// ("2p" on the machines here), where the BSP hands each span to its
// export goroutine on another core, and on one P ("1p"), where nothing
// is handed across cores and the figure is the CPU each side adds to a
// span. Kept is not here: Badger compacts after a flush returns, on the
// next provider's turn. b.N is the spans of each provider.
func BenchmarkSpanTurns(b *testing.B) {
	for _, procs := range []int{runtime.GOMAXPROCS(0), 1} {
		b.Run(fmt.Sprintf("%dp", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			sides := []turnSide{{name: "bsp"}, {name: "aa"}, {name: "warm"}}
			for i, p := range []provider{bsp, bsp, warm} {
				sides[i].tp, _ = p.make(b)
				defer checkShutdown(b, sides[i].tp)
				sides[i].tr = sides[i].tp.Tracer("bench")
			}
			ctx := context.Background()
			settle()
			b.ResetTimer()
			for c, from := 0, 0; from < b.N; c, from = c+1, from+turnChunk {
				to := min(from+turnChunk, b.N)
				for j := range sides {
					if c%2 == 1 {
						j = len(sides) - 1 - j
					}
					sides[j].turn(b, ctx, from, to)
				}
			}
			b.StopTimer()
			reportTurns(b, sides)
		})
	}
}

// parallelSpans is how many spans each of figure 4's goroutines ends.
var parallelSpans = flag.Int("parallel-spans", 300_000, "spans each goroutine of BenchmarkParallel ends")

// parallelGoroutines is how many goroutines end spans at once in figure 4.
const parallelGoroutines = 8

// BenchmarkParallel is figure 4: 8 goroutines end 300,000 spans each at
// once, as fast as they can, on a kept session at level basic, then the
// provider is flushed; the figure is how many spans our exporter dropped
// (Stats().Dropped): a run far longer than its queue, so a queue that
// cannot keep up shows. Beside it, the time and process CPU per span
// against the BatchSpanProcessor (WithBlocking) under the same load. Run
// it with -benchtime 1x.
func BenchmarkParallel(b *testing.B) {
	for _, p := range []provider{bsp, kept} {
		b.Run(p.name, func(b *testing.B) {
			tp, exp := p.make(b)
			defer checkShutdown(b, tp)
			tr := tp.Tracer("bench")
			ctx := context.Background()
			var before exporter.Stats
			if exp != nil {
				before = exp.Stats()
			}
			n := *parallelSpans
			settle()
			b.ResetTimer()
			cpu := processCPU(b)
			for range b.N {
				var wg sync.WaitGroup
				for g := range parallelGoroutines {
					wg.Go(func() { endSpans(ctx, tr, g*n, (g+1)*n) })
				}
				wg.Wait()
				if err := tp.ForceFlush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			cpu = processCPU(b) - cpu
			b.StopTimer()
			spans := float64(b.N * parallelGoroutines * n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/spans, "ns/span")
			b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
			if exp == nil {
				return
			}
			st := exp.Stats()
			dropped := st.Dropped - before.Dropped
			b.ReportMetric(float64(dropped), "dropped-spans")
			if written := st.Written - before.Written; written+dropped != int64(spans) {
				b.Fatalf("%d spans: %d written, %d dropped (%+v)", int64(spans), written, dropped, st)
			}
		})
	}
}

// reportDropped reports the share of spans our exporter dropped because
// its queue was full (a figure that drops spans is a MISS: its CPU per
// span counts spans not handled).
func reportDropped(b *testing.B, exp *exporter.Exporter) {
	if exp == nil {
		return
	}
	b.ReportMetric(float64(exp.Stats().Dropped)/float64(b.N), "dropped/op")
}
