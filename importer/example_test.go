package importer_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Spans another program sent — here two, as a Collector would have
// received them over OTLP — are recorded as that program's own session.
// The store is in memory, so the example can show what was kept; a
// gateway gives New a directory.
func Example() {
	store := sessions.NewMemStore()
	im, err := importer.New("", importer.Config{}, importer.WithStore(store))
	if err != nil {
		panic(err)
	}
	start := time.Now().Add(-time.Second)
	tid := trace.TraceID{1}
	spans := []importer.Span{
		{TraceID: tid, SpanID: trace.SpanID{2}, ParentSpanID: trace.SpanID{1}, Name: "tune b",
			Start: start.Add(time.Millisecond), End: start.Add(2 * time.Millisecond),
			Attributes: []attribute.KeyValue{spanbridge.Kind("autotune"), spanbridge.Changed()}},
		{TraceID: tid, SpanID: trace.SpanID{1}, Name: "tune", Start: start, End: start.Add(3 * time.Millisecond),
			Attributes: []attribute.KeyValue{spanbridge.Kind("marks")}},
	}
	resource := []attribute.KeyValue{attribute.String("service.name", "tuner"), attribute.Int("process.pid", 4242)}
	res, err := im.Import(context.Background(), importer.Batch{Resource: resource, Spans: spans})
	if err != nil {
		panic(err)
	}
	fmt.Println("accepted:", res.Accepted)
	if err := im.Shutdown(context.Background()); err != nil {
		panic(err)
	}
	r := sessions.NewRecords(store.Reopen())
	for s := range r.Sessions() {
		fmt.Println("session of process", s.Process)
	}
	for _, kind := range []string{"marks", "autotune"} {
		for rec := range r.All(kind) {
			fmt.Println(kind, rec.Stamp.Seq, rec.Record.Name)
		}
	}
	// Output:
	// accepted: 2
	// session of process 4242
	// marks 0 tune
	// autotune 1 tune b
}
