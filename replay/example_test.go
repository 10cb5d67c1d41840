package replay_test

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Replay a store through a SpanExporter. Here the store is in memory and
// the exporter keeps what it is sent; `records replay` opens a Badger
// store read-only and sends through an OTLP exporter.
func ExampleReplay() {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	store := sessions.NewMemStore()
	rec, _ := exporter.New("", exporter.WithStore(store), exporter.WithLabel("models build"),
		exporter.WithClock(func() time.Time { return start }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("example").Start(context.Background(), "compile matmul",
		append(spanbridge.Record("compile", spanbridge.Changed()), trace.WithTimestamp(start.Add(time.Millisecond)))...)
	span.End(trace.WithTimestamp(start.Add(4 * time.Millisecond)))
	_ = tp.Shutdown(context.Background())

	exp := tracetest.NewInMemoryExporter()
	p, err := replay.Replay(context.Background(), sessions.NewRecords(store.Reopen()), exp, replay.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d session, %d span\n", p.Sessions, p.Spans)
	for _, s := range exp.GetSpans() {
		label, _ := s.Resource.Set().Value("records.session.label")
		fmt.Println(s.Name, s.StartTime.UTC().Format(time.StampMilli), s.EndTime.Sub(s.StartTime), label.AsString())
	}
	// Output:
	// 1 session, 1 span
	// compile matmul Jan  2 03:04:05.001 3ms models build
}
