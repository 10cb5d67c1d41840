package spanbridge_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// endedSpan runs one instrumented step on a provider of its own and
// returns the span it ended: what the exporter receives in OnEnd.
func endedSpan(start time.Time) sdktrace.ReadOnlySpan {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	tr := tp.Tracer("example.com/build")

	_, span := tr.Start(context.Background(), "compile matmul", append(spanbridge.Record("compile",
		attribute.String("kernel", "matmul_tiled"),
		spanbridge.Full(attribute.String("source", "kernel void matmul() {}")),
	), trace.WithTimestamp(start))...)
	span.AddEvent("cache miss", trace.WithTimestamp(start.Add(time.Millisecond)))
	spanbridge.MarkChanged(span) // it stored an artifact
	span.SetStatus(codes.Ok, "")
	span.End(trace.WithTimestamp(start.Add(3 * time.Millisecond)))

	_ = tp.Shutdown(context.Background())
	return spans.Ended()[0]
}

// A span started with Record is a record of its kind; MarkChanged says it
// changed something, which keeps its session. Map makes the record: the
// control attributes say where it goes and are not repeated in its body,
// and the heavy attribute stays only at level full. The attributes the
// span started with are the record's inputs: the exporter counts them in
// OnStart with InputCount (here records.kind, records.effect, kernel and
// source: 4).
func ExampleMap() {
	s := endedSpan(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))

	m := spanbridge.Map(s, sessions.LevelBasic, 4)
	fmt.Println(m.Kind, m.Effect, m.Record.Name, m.Record.Wall, m.Record.Status.Code, m.Record.SpanKind)
	for _, level := range []sessions.Level{sessions.LevelBasic, sessions.LevelFull} {
		r := spanbridge.Map(s, level, 4).Record
		for _, kv := range r.Attributes {
			fmt.Printf("%s: %s=%v input=%t\n", level, kv.Key, kv.Value, r.IsInput(kv.Key))
		}
	}
	// Output:
	// compile changed compile matmul 3ms ok internal
	// basic: kernel=matmul_tiled input=true
	// full: kernel=matmul_tiled input=true
	// full: source=kernel void matmul() {} input=true
}

// Span gives a stored record back as the span it was, under its session's
// Resource: what replay sends to a backend. Its start is the session's
// start (its id) plus the record's offset.
func ExampleSpan() {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s := endedSpan(start.Add(time.Second))
	m := spanbridge.Map(s, sessions.LevelBasic, 4)

	session := sessions.Session{ID: sessions.SessionID(start.UnixNano()), Label: "models build"}
	back := spanbridge.Span(spanbridge.Resource(session), m.Kind, sessions.Stamped[sessions.Record]{
		Stamp:  sessions.Stamp{Session: session.ID, Seq: 4, Offset: time.Second},
		Record: m.Record,
	})

	fmt.Println(back.Name(), back.StartTime().UTC().Format(time.StampMilli), back.EndTime().Sub(back.StartTime()))
	fmt.Println(back.SpanContext().SpanID() == s.SpanContext().SpanID(), back.Status().Code)
	for _, kv := range back.Attributes() {
		fmt.Println(kv.Key, kv.Value.Emit())
	}
	label, _ := back.Resource().Set().Value(spanbridge.SessionLabelKey)
	fmt.Println(label.AsString())
	// Output:
	// compile matmul Jan  2 03:04:06.000 3ms
	// true Ok
	// kernel matmul_tiled
	// records.kind compile
	// records.seq 4
	// records.effect changed
	// records.inputs ["kernel"]
	// models build
}

// AtLevel says which attributes leave the process at a level: below full,
// not the heavy ones. The exporter applies it to the records it stores and
// to the spans it forwards alike.
func ExampleAtLevel() {
	kvs := []attribute.KeyValue{
		attribute.String("kernel", "matmul_tiled"),
		spanbridge.Full(attribute.String("source", "kernel void matmul() {}")),
	}
	fmt.Println(len(spanbridge.AtLevel(kvs, sessions.LevelBasic)), len(spanbridge.AtLevel(kvs, sessions.LevelFull)))
	// Output:
	// 1 2
}

// A span started with Mark, or with no records.kind at all, is a mark: a
// named stretch of the program's work, stored as kind "marks", which lays
// the records inside it out on the timeline.
func ExampleMark() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	_, span := tp.Tracer("example.com/build").Start(context.Background(), "warm-up",
		spanbridge.Mark(attribute.String("model", "qwen3-8b"))...)
	span.End()
	_ = tp.Shutdown(context.Background())

	m := spanbridge.Map(spans.Ended()[0], sessions.LevelBasic, 1)
	fmt.Println(m.Kind, m.Effect, m.Record.Name, m.Record.Attributes)
	// Output:
	// marks observed warm-up [{model qwen3-8b}]
}
