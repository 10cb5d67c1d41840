package spanbridge

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Source is what Map reads of an ended span: the methods of
// sdktrace.ReadOnlySpan it calls, and no more. A span of the Go SDK is
// one; so is a span that reached the library some other way (OTLP
// arriving at a Collector, through importer.Importer), which cannot be
// an sdktrace.ReadOnlySpan (that interface is closed to other packages).
// One mapping serves both, so a span is recorded the same whichever way
// it came.
type Source interface {
	Name() string
	SpanContext() trace.SpanContext
	Parent() trace.SpanContext
	SpanKind() trace.SpanKind
	StartTime() time.Time
	EndTime() time.Time
	Attributes() []attribute.KeyValue
	Links() []sdktrace.Link
	Events() []sdktrace.Event
	Status() sdktrace.Status
	InstrumentationScope() instrumentation.Scope
	DroppedAttributes() int
	DroppedLinks() int
	DroppedEvents() int
}

var _ Source = sdktrace.ReadOnlySpan(nil)
