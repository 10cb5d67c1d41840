package spanbridge_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// BenchmarkMapTo is what mapping an ended span of four attributes costs
// the goroutine that ended it (exporter.OnEnd maps on it), reusing one
// Mapped as the exporter does.
func BenchmarkMapTo(b *testing.B) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, s := tp.Tracer("bench").Start(context.Background(), "compile", trace.WithAttributes(
		spanbridge.KindKey.String("compile"),
		attribute.String("unit", "pkg/one"),
		attribute.Int("n", 1234),
		attribute.Bool("opt", true),
	))
	s.End()
	span := rec.Ended()[0]
	var m spanbridge.Mapped
	b.ReportAllocs()
	for b.Loop() {
		spanbridge.MapTo(&m, span, sessions.LevelBasic, 4)
	}
	if m.Kind != "compile" || len(m.Record.Attributes) != 3 {
		b.Fatalf("mapped %q with %d attributes", m.Kind, len(m.Record.Attributes))
	}
}
