package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	store := build(sessions.NewMemStore(), start, "compile matmul")

	exp := tracetest.NewInMemoryExporter()
	p, err := replay.Replay(context.Background(), sessions.NewRecords(store), exp, replay.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d session, %d span, %d tally\n", p.Sessions, p.Spans, p.Tallies)
	for _, s := range exp.GetSpans() {
		label, _ := s.Resource.Set().Value("records.session.label")
		fmt.Println(s.Name, s.StartTime.UTC().Format(time.StampMilli), s.EndTime.Sub(s.StartTime), label.AsString())
	}
	// Output:
	// 1 session, 1 span, 1 tally
	// compile matmul Jan  2 03:04:05.001 3ms models build
	// records.tally Jan  2 03:04:05.000 0s models build
}

// start is when the examples' first build starts.
var start = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// build records a session started at start, of one compile named name, in
// store, as a program recording through the exporter does, and returns the
// store as the next program finds it (the exporter closes its store).
func build(store *sessions.MemStore, start time.Time, name string) *sessions.MemStore {
	rec, _ := exporter.New("", exporter.WithStore(store), exporter.WithLabel("models build"),
		exporter.WithClock(func() time.Time { return start }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("example").Start(context.Background(), name,
		append(spanbridge.Record("compile", spanbridge.Changed()), trace.WithTimestamp(start.Add(time.Millisecond)))...)
	span.End(trace.WithTimestamp(start.Add(4 * time.Millisecond)))
	_ = tp.Shutdown(context.Background())
	return store.Reopen()
}

// Send each record once: a cursor file names what the backend accepted,
// and a run after the next build sends only what is new.
func ExampleResume() {
	dir, _ := os.MkdirTemp("", "cursor")
	defer os.RemoveAll(dir)
	cursor := filepath.Join(dir, "sent")
	store := sessions.NewMemStore()
	exp := tracetest.NewInMemoryExporter()
	send := func() {
		res, err := replay.Resume(context.Background(), sessions.NewRecords(store), exp, cursor, replay.Options{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d unsent: sent %d of %d sessions, %d remain\n", res.Unsent, res.Records, res.Sessions, res.Remain)
	}

	store = build(store, start, "compile matmul")
	send()
	send() // nothing new
	store = build(store, start.Add(time.Hour), "compile softmax")
	send()
	fmt.Println(len(exp.GetSpans()), "spans sent in all: each record, and each session's tally")
	// Output:
	// 1 unsent: sent 1 of 1 sessions, 0 remain
	// 0 unsent: sent 0 of 0 sessions, 0 remain
	// 1 unsent: sent 1 of 1 sessions, 0 remain
	// 4 spans sent in all: each record, and each session's tally
}
