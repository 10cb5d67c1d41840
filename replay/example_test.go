package replay_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
)

// Replay a store through a SpanExporter. Here the store is in memory and
// the exporter keeps what it is sent; `records replay` opens a Badger
// store read-only and sends through an OTLP exporter.
func ExampleReplay() {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	store := sessions.NewMemStore()
	rec := sessions.NewRecorder(sessions.Config{Level: sessions.LevelBasic, Label: "models build"},
		func() (sessions.Store, error) { return store, nil }, func() time.Time { return start })
	st, _ := rec.Stamp(start.Add(time.Millisecond))
	_ = rec.Record("compile", sessions.Changed, st, sessions.Record{Name: "compile matmul", Wall: 3 * time.Millisecond})
	_ = rec.Close()

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
