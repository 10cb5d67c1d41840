package exporter_test

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// records returns every record of kind in the store.
func records(t *testing.T, mem *sessions.MemStore, kind string) []sessions.Record {
	t.Helper()
	var out []sessions.Record
	for rec, err := range sessions.NewRecords(mem.Reopen()).All(kind) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Record)
	}
	return out
}

// TestRecordSaysWhatItDid checks, through the exporter, that a record
// keeps its span kind, links and trace state, its effect, and which of
// its attributes it started with.
func TestRecordSaysWhatItDid(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 15: 2}, SpanID: trace.SpanID{3, 7: 4}})
	ts, err := trace.ParseTraceState("vendor=x")
	if err != nil {
		t.Fatal(err)
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{9, 15: 9}, SpanID: trace.SpanID{9, 7: 9}, TraceFlags: trace.FlagsSampled, Remote: true, TraceState: ts,
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	_, s := p.tr.Start(ctx, "tune", append(spanbridge.Record("autotune",
		attribute.String("autotune.key", "matmul"), attribute.StringSlice("candidates", []string{"tiled", "simd"})),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "batch")}}))...)
	s.SetAttributes(attribute.String("winner", "tiled"))
	spanbridge.MarkChanged(s)
	s.End()
	p.shutdown(t)

	recs := records(t, mem, "autotune")
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	r := recs[0]
	if r.Effect != sessions.Changed || r.SpanKind != "server" || r.TraceState != "vendor=x" {
		t.Errorf("effect %v, span kind %q, trace state %q", r.Effect, r.SpanKind, r.TraceState)
	}
	if !slices.Equal(r.Inputs, []string{"autotune.key", "candidates"}) || r.IsInput("winner") {
		t.Errorf("inputs %q (winner an input: %t), want the key and candidates", r.Inputs, r.IsInput("winner"))
	}
	if len(r.Links) != 1 || r.Links[0].TraceID != sessions.TraceID(linked.TraceID()) || r.Links[0].SpanID != sessions.SpanID(linked.SpanID()) {
		t.Fatalf("links %+v", r.Links)
	}
	if v, ok := r.Links[0].Attributes.Get("why"); !ok || v.AsString() != "batch" {
		t.Errorf("link attributes %v", r.Links[0].Attributes)
	}
}
