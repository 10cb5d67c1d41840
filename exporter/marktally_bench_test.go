package exporter_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
)

// BenchmarkImplicitMarksLetGo is the span calls of a server's spans that
// carry no records attribute and enclose no record (otelhttp's, a
// driver's) under MarksEnclosing: let go at OnEnd, and counted there for
// the tally. RunParallel: the goroutines ending them share the counts'
// shards.
func BenchmarkImplicitMarksLetGo(b *testing.B) {
	exp, err := exporter.New("", exporter.WithStore(sessions.NewMemStore()), exporter.WithLevel(sessions.LevelBasic))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("bench")
	names := []string{"GET /a", "GET /b", "SELECT", "redis GET"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := 0
		for pb.Next() {
			_, s := tr.Start(ctx, names[i%len(names)])
			s.End()
			i++
		}
	})
}
