//go:build bench

package bench

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
)

// BenchmarkForward measures what exporter.WithForward adds to the span hot
// path, on BenchmarkHotPath's span (4 attributes, one goroutine): ours with
// the session kept, without and with a forward exporter (one that
// discards, so the figure is ours and not a network's); the same with a
// session never kept (every span held, then evicted by the budget); and
// the reference, the SDK's BatchSpanProcessor into the same discarding
// exporter — what sending every span costs without otelrecords.
//
// Forwarding happens on background goroutines, so on the hot path it
// should cost nothing; what it can cost is CPU those goroutines take from
// the caller's on a small machine, which is what this measures.
func BenchmarkForward(b *testing.B) {
	noop := func() sdktrace.SpanExporter { return tracetest.NewNoopExporter() }
	cases := []struct {
		name string
		make func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter)
	}{
		{"kept", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
			return keptProvider(b, b.TempDir(), nil, exporter.WithLevel(sessions.LevelBasic))
		}},
		{"kept+forward", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
			return keptProvider(b, b.TempDir(), nil, exporter.WithLevel(sessions.LevelBasic), exporter.WithForward(noop()))
		}},
		{"held", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
			exp, err := exporter.New(b.TempDir(), exporter.WithLevel(sessions.LevelBasic))
			if err != nil {
				b.Fatal(err)
			}
			return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp)), exp
		}},
		{"held+forward", func(b *testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
			exp, err := exporter.New(b.TempDir(), exporter.WithLevel(sessions.LevelBasic), exporter.WithForward(noop()))
			if err != nil {
				b.Fatal(err)
			}
			return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp)), exp
		}},
		{"batch", func(*testing.B) (*sdktrace.TracerProvider, *exporter.Exporter) {
			return sdktrace.NewTracerProvider(sdktrace.WithBatcher(noop())), nil
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tp, exp := c.make(b)
			defer checkShutdown(b, tp)
			tr := tp.Tracer("bench")
			ctx := context.Background()
			opt := trace.WithAttributes(workload.Attrs(0)...)
			b.ReportAllocs()
			for b.Loop() {
				workload.Span(ctx, tr, opt)
			}
			b.StopTimer()
			reportDropped(b, exp)
			if exp != nil {
				// Spans the forward queue had no room for: a loop this
				// tight outruns any exporter, as it outruns the store.
				b.ReportMetric(float64(exp.ForwardStats().Dropped)/float64(b.N), "fwd-dropped/op")
			}
		})
	}
}
