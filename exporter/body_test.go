package exporter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// countErrors returns how many of the errors reported are target.
func countErrors(e *testsupport.Errors, target error) int {
	n := 0
	for _, err := range e.All() {
		if errors.Is(err, target) {
			n++
		}
	}
	return n
}

// params returns n attributes, as a span that records many parameters has.
func params(n int) []attribute.KeyValue {
	kvs := make([]attribute.KeyValue, n)
	for i := range kvs {
		kvs[i] = attribute.Int(fmt.Sprintf("param.%03d", i), i)
	}
	return kvs
}

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

// TestChangeSurvivesTheAttributeLimit is issue 10.5, through the
// OpenTelemetry API on a provider with the SDK's default limits: a span
// started with spanbridge.Record and 128 attributes, changed later, keeps
// its session, because the change updates the records.effect key Record
// gave the span rather than adding a key the SDK would drop.
func TestChangeSurvivesTheAttributeLimit(t *testing.T) {
	e := captureErrors(t)
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	_, s := p.tr.Start(context.Background(), "tune", spanbridge.Record("autotune", params(sdktrace.DefaultAttributeCountLimit)...)...)
	s.SetAttributes(attribute.String("winner", "tiled")) // dropped: the span is full
	spanbridge.MarkChanged(s)
	s.End()
	p.shutdown(t)

	if ss := countSessions(t, sessions.NewRecords(mem.Reopen())); len(ss) != 1 {
		t.Fatalf("%d sessions kept, want the changed one", len(ss))
	}
	recs := records(t, mem, "autotune")
	if len(recs) != 1 || recs[0].Effect != sessions.Changed {
		t.Fatalf("records %+v, want one, changed", recs)
	}
	// records.kind and records.effect came first: the last two parameters
	// given and the winner were dropped, and the record says so.
	if r := recs[0]; r.DroppedAttributes != 3 || len(r.Attributes) != sdktrace.DefaultAttributeCountLimit-2 {
		t.Errorf("dropped %d, %d attributes stored", r.DroppedAttributes, len(r.Attributes))
	}
	if n := countErrors(e, spanbridge.ErrAttributesDropped); n != 0 {
		t.Errorf("reported though the effect could not be lost: %v", e.All())
	}
}

// TestEffectLostAtTheLimitIsReported is the same span started without
// spanbridge.Record: the SDK drops the change, the session is not kept,
// and the exporter says why, once, however many spans lose it.
func TestEffectLostAtTheLimitIsReported(t *testing.T) {
	e := captureErrors(t)
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	for range 3 {
		attrs := append([]attribute.KeyValue{spanbridge.Kind("autotune")}, params(sdktrace.DefaultAttributeCountLimit-1)...)
		_, s := p.tr.Start(context.Background(), "tune", trace.WithAttributes(attrs...))
		spanbridge.MarkChanged(s)
		s.End()
	}
	p.shutdown(t)

	if ss := countSessions(t, sessions.NewRecords(mem.Reopen())); len(ss) != 0 {
		t.Fatalf("%d sessions kept; the SDK dropped the change, so none should be", len(ss))
	}
	if n := countErrors(e, spanbridge.ErrAttributesDropped); n != 1 {
		t.Errorf("dropped attributes reported %d times, want once: %v", n, e.All())
	}
	if got := p.exp.Stats().AttributesDropped; got != 3 {
		t.Errorf("AttributesDropped = %d, want 3", got)
	}
	if got := p.exp.Stats().Problems; got != 3 {
		t.Errorf("Problems = %d, want 3", got)
	}
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
