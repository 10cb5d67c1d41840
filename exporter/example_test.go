package exporter_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A program plugs the exporter into its TracerProvider and instruments its
// work with ordinary spans. Here the store is in memory, so the example
// can show what was kept; in a program, exporter.New(dir) writes to Badger.
func Example() {
	store := sessions.NewMemStore()
	rec, err := exporter.New("", exporter.WithStore(store), exporter.WithLabel("build"))
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("example")

	ctx, phase := tracer.Start(context.Background(), "tune") // a mark
	_, hit := tracer.Start(ctx, "tune a", spanbridge.Record("autotune", attribute.String("key", "a"))...)
	hit.End() // observed: held until something changes
	_, miss := tracer.Start(ctx, "tune b", spanbridge.Record("autotune", attribute.String("key", "b"))...)
	miss.SetAttributes(spanbridge.Changed()) // a new winner was stored: keep the session
	miss.End()
	phase.End()

	if err := tp.Shutdown(context.Background()); err != nil {
		panic(err)
	}
	r := sessions.NewRecords(store.Reopen())
	for s := range r.Sessions() {
		fmt.Println("session:", s.Label)
	}
	for _, kind := range []string{"marks", "autotune"} {
		for rec := range r.All(kind) {
			fmt.Println(kind, rec.Stamp.Seq, rec.Record.Name)
		}
	}
	// Output:
	// session: build
	// marks 0 tune
	// autotune 1 tune a
	// autotune 2 tune b
}

// A session that only observes — a warm run — keeps nothing.
func Example_warm() {
	store := sessions.NewMemStore()
	rec, _ := exporter.New("", exporter.WithStore(store))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	for range 100 {
		_, s := tp.Tracer("example").Start(context.Background(), "lookup", spanbridge.Record("autotune")...)
		s.End()
	}
	tp.ForceFlush(context.Background())
	fmt.Println("held:", rec.Stats().Held)
	tp.Shutdown(context.Background())
	fmt.Println("entries in the store:", store.Reopen().Len())
	// Output:
	// held: 100
	// entries in the store: 0
}
