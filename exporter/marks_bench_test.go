package exporter_test

import (
	"context"
	"iter"
	"runtime"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// BenchmarkEnclosingMarks measures what MarksEnclosing costs on the span
// calls: a request span without records.kind (an implicit mark) holding a
// record that sets an attribute after it starts. Both policies record both
// spans; under MarksEnclosing the record's OnStart also looks its parent
// up in the stamp table, reads its own attributes (which makes the SDK
// copy them at the record's next SetAttributes: one allocation) and marks
// the parent. The store discards what it is given, so ns/op is the span
// calls plus the background mapping and encoding, and caller-cpu-ns/op
// (where the platform tells a thread's CPU time) the span calls alone.
func BenchmarkEnclosingMarks(b *testing.B) {
	for _, m := range []exporter.Marks{exporter.MarksAll, exporter.MarksEnclosing} {
		b.Run(m.String(), func(b *testing.B) {
			exp, err := exporter.New("", exporter.WithStore(discard{}), exporter.WithMarks(m))
			if err != nil {
				b.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
			defer tp.Shutdown(context.Background())
			tr := tp.Tracer("bench")
			_, keep := tr.Start(context.Background(), "keep", spanbridge.Record("compile", spanbridge.Changed())...)
			keep.End()
			record := spanbridge.Record("lookup", attribute.String("key", "sha256:1234"))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu := threadCPU()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ctx, req := tr.Start(context.Background(), "GET /artifact")
				_, lookup := tr.Start(ctx, "lookup", record...)
				lookup.SetAttributes(attribute.Bool("hit", true))
				lookup.End()
				req.End()
			}
			if used := threadCPU() - cpu; used > 0 {
				b.ReportMetric(float64(used)/float64(b.N), "caller-cpu-ns/op")
			}
			if err := tp.ForceFlush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if st := exp.Stats(); st.Written != int64(2*b.N+1) {
				b.Fatalf("%d records written, want %d", st.Written, 2*b.N+1)
			}
		})
	}
}

// discard is a store that takes every write and keeps nothing.
type discard struct{}

func (discard) Write([]sessions.Entry) error { return nil }
func (discard) Scan([]byte, []byte) iter.Seq2[sessions.Entry, error] {
	return func(func(sessions.Entry, error) bool) {}
}
func (discard) DeleteRange([]byte, []byte, func([]byte) bool) (int, error) { return 0, nil }
func (discard) Close() error                                               { return nil }
