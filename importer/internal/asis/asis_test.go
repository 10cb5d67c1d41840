package asis

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestCheck holds each rule of Check to a span that breaks only it: a
// span as it came goes on as it came, and each thing a record says
// otherwise than its span makes it a span made again.
func TestCheck(t *testing.T) {
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	plain := []attribute.KeyValue{attribute.String("records.kind", "cache"), attribute.String("records.effect", "changed"), attribute.String("cache.key", "k1")}
	event := sdktrace.Event{Name: "hit", Time: start.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.Int("n", 1)}}
	link := sdktrace.Link{Attributes: []attribute.KeyValue{attribute.String("why", "retry")}}
	with := func(kvs ...attribute.KeyValue) []attribute.KeyValue {
		return append(append([]attribute.KeyValue{}, plain...), kvs...)
	}
	for _, c := range []struct {
		name   string
		kind   trace.SpanKind
		attrs  []attribute.KeyValue
		events []sdktrace.Event
		links  []sdktrace.Link
		want   bool
	}{
		{"plain", trace.SpanKindServer, plain, []sdktrace.Event{event}, []sdktrace.Link{link}, true},
		{"no records attributes (an implicit mark)", trace.SpanKindInternal, []attribute.KeyValue{attribute.String("http.route", "/get")}, nil, nil, true},
		{"unspecified kind", trace.SpanKindUnspecified, plain, nil, nil, true},
		{"a kind OTLP does not name", trace.SpanKind(9), plain, nil, nil, false},
		{"records.seq given", trace.SpanKindInternal, with(attribute.Int("records.seq", 3)), nil, nil, false},
		{"a heavy attribute", trace.SpanKindInternal, with(attribute.String("records.full.source", "…")), nil, nil, false},
		{"records.span.start given", trace.SpanKindInternal, with(attribute.Int("records.span.start", 1)), nil, nil, false},
		{"records.kind twice", trace.SpanKindInternal, with(attribute.String("records.kind", "other")), nil, nil, false},
		{"records.effect twice", trace.SpanKindInternal, with(attribute.String("records.effect", "observed")), nil, nil, false},
		{"an event before the start", trace.SpanKindInternal, plain, []sdktrace.Event{{Name: "early", Time: start.Add(-time.Nanosecond)}}, nil, false},
		{"an event's records attribute", trace.SpanKindInternal, plain, []sdktrace.Event{{Name: "e", Time: start, Attributes: []attribute.KeyValue{attribute.String("records.kind", "x")}}}, nil, false},
		{"a link's records attribute", trace.SpanKindInternal, plain, nil, []sdktrace.Link{{Attributes: []attribute.KeyValue{attribute.String("records.effect", "changed")}}}, false},
	} {
		if got := Check(c.kind, start, c.attrs, c.events, c.links); got != c.want {
			t.Errorf("%s: Check = %v, want %v", c.name, got, c.want)
		}
	}
}
