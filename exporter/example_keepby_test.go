package exporter_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A server keeps by request: of three requests, the one that filled the
// cache is kept, with its lookup, and the two that found it warm are not,
// though the session was kept before the third came.
func ExampleWithKeepBy() {
	store := sessions.NewMemStore()
	rec, err := exporter.New("", exporter.WithStore(store), exporter.WithKeepBy(exporter.KeepByTrace))
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("server")
	cache := map[string]bool{}
	serve := func(key string) {
		ctx, req := tracer.Start(context.Background(), "GET /lookup", trace.WithSpanKind(trace.SpanKindServer))
		defer req.End() // the local root: its end decides the request
		ctx, lookup := tracer.Start(ctx, "lookup "+key, spanbridge.Record("lookup", attribute.String("key", key))...)
		defer lookup.End()
		if !cache[key] {
			_, compile := tracer.Start(ctx, "compile "+key, spanbridge.Record("compile", spanbridge.Changed())...)
			cache[key] = true
			compile.End()
		}
	}
	serve("a") // a miss
	serve("a") // hits
	serve("a")

	if err := tp.Shutdown(context.Background()); err != nil {
		panic(err)
	}
	r := sessions.NewRecords(store.Reopen())
	kinds, _ := r.Kinds()
	for rec, err := range r.InStampOrder(kinds) {
		if err == nil {
			fmt.Println(rec.Kind, rec.Record.Name)
		}
	}
	fmt.Println("traces kept:", rec.Stats().TracesKept)
	// Output:
	// marks GET /lookup
	// lookup lookup a
	// compile compile a
	// traces kept: 1
}
