package exporter_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Where the level can be off (OTELRECORDS_LEVEL=off, or a switch in the
// program), Register rather than sdktrace.WithSpanProcessor: at level off
// the exporter is then not on the provider at all, and spans cost what
// they cost without it.
func ExampleExporter_Register() {
	store := sessions.NewMemStore()
	rec, err := exporter.New("", exporter.WithStore(store), exporter.WithLevel(sessions.LevelOff))
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider()
	rec.Register(tp) // level off: not on tp
	// Shutdown the exporter too: tp.Shutdown reaches it only while it is
	// on tp. After tp's, this one does nothing.
	defer rec.Shutdown(context.Background())
	defer tp.Shutdown(context.Background())

	work := func(name string) {
		_, s := tp.Tracer("example").Start(context.Background(), name, spanbridge.Record("compile", spanbridge.Changed())...)
		s.End()
	}
	work("unrecorded")
	rec.SetLevel(sessions.LevelBasic) // on tp from here
	work("recorded")
	tp.ForceFlush(context.Background())
	fmt.Println("written:", rec.Stats().Written)
	// Output:
	// written: 1
}
