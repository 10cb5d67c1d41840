//go:build bench

package bench

import (
	"context"
	"runtime"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
)

// hotPathProviders are the TracerProviders figures 1 and 2 compare: ours
// with its session kept (every span is written), ours at level off, the
// SDK's BatchSpanProcessor into an exporter that discards, a processor
// that does nothing (the floor of any processor: the SDK snapshots every
// ended span once a processor is registered), and no processor at all.
// The references come first and ours last, and each sub-benchmark starts
// from a collected heap (settle).
var hotPathProviders = []struct {
	name string
	make func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter)
}{
	{"none", func(*testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
		return sdktrace.NewTracerProvider(), nil
	}},
	{"emptyprocessor", func(*testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
		return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(emptyProcessor{})), nil
	}},
	{"off", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
		exp, err := exporter.New(b.TempDir(), exporter.WithLevel(sessions.LevelOff))
		if err != nil {
			b.Fatal(err)
		}
		return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp)), exp
	}},
	{"batch", func(*testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
		bsp := sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
		return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bsp)), nil
	}},
	{"otelrecords", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
		return keptProvider(b, b.TempDir(), nil, exporter.WithLevel(sessions.LevelBasic))
	}},
}

// settle collects the garbage the previous sub-benchmark left (ours leaves
// a lot: every span it wrote), so that the next one does not pay for it.
func settle() {
	runtime.GC()
	runtime.GC()
}

// emptyProcessor is a SpanProcessor whose every method does nothing.
type emptyProcessor struct{}

func (emptyProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (emptyProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (emptyProcessor) Shutdown(context.Context) error                  { return nil }
func (emptyProcessor) ForceFlush(context.Context) error                { return nil }

// BenchmarkHotPath is figures 1 and 2: the start and end of a span with 4
// attributes, on one goroutine.
//
// The clock stops after a ForceFlush of the provider, not after the last
// span: a processor's queue (ours holds 65536 spans) would otherwise carry
// part of the work of the spans timed past the clock, and a processor
// would look the cheaper the slower its background goroutine. What the
// figure counts is everything the process does for the spans it timed
// (for ours: queue, map, encode and write to the store; a span dropped
// because the queue was full costs only its drop).
func BenchmarkHotPath(b *testing.B) {
	for _, p := range hotPathProviders {
		b.Run(p.name, func(b *testing.B) {
			tp, exp := p.make(b)
			defer checkShutdown(b, tp)
			tr := tp.Tracer("bench")
			ctx := context.Background()
			// One option, made once: the benchmark measures the span and
			// its processors, not the caller building attributes.
			opt := trace.WithAttributes(workload.Attrs(0)...)
			settle()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				workload.Span(ctx, tr, opt)
			}
			if err := tp.ForceFlush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportDropped(b, exp)
		})
	}
}

// BenchmarkHotPathParallel is figure 1 with 8 goroutines ending spans at
// once; its clock too stops after a ForceFlush.
func BenchmarkHotPathParallel(b *testing.B) {
	for _, p := range hotPathProviders {
		b.Run(p.name, func(b *testing.B) {
			tp, exp := p.make(b)
			defer checkShutdown(b, tp)
			tr := tp.Tracer("bench")
			opt := trace.WithAttributes(workload.Attrs(0)...)
			b.SetParallelism((8 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			settle()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					workload.Span(ctx, tr, opt)
				}
			})
			if err := tp.ForceFlush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportDropped(b, exp)
		})
	}
}

// reportDropped reports the share of spans our exporter dropped because
// its queue was full: a span loop this tight ends spans faster than any
// store can take them.
func reportDropped(b *testing.B, exp *exporter.Exporter) {
	if exp == nil {
		return
	}
	st := exp.Stats()
	b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
}
