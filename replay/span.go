package replay

import (
	"encoding/binary"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The attributes replay adds, beside those the records carried.
const (
	// SessionIDKey (Resource) is the session's id, in decimal: the form
	// `records dump --session` takes. A string, because an id is a
	// nanosecond timestamp near 1.7e18, beyond what a JavaScript UI's
	// numbers hold exactly.
	SessionIDKey = attribute.Key("records.session.id")
	// SessionVersionKey (Resource) is the otelrecords version that wrote
	// the session.
	SessionVersionKey = attribute.Key("records.session.version")
	// SeqKey (span) is the record's seq in its session: where it sits
	// among the session's records, across every kind.
	SeqKey = attribute.Key("records.seq")
)

// Resource returns the Resource a session's spans replay with: the
// Resource attributes its process had (service.name, ...), the process
// fields as OpenTelemetry semantic conventions name them (process.pid,
// os.type, host.arch; the Resource's own values win), and the session's
// fields records.session.id, records.session.label (when it has one) and
// records.session.version. A session whose Resource had no service.name
// gets "unknown_service", as the SDK names a service that did not say.
func Resource(s sessions.Session) *resource.Resource {
	attrs := make([]attribute.KeyValue, 0, len(s.Resource)+7)
	attrs = append(attrs, attribute.String("service.name", "unknown_service"))
	if s.Process != 0 {
		attrs = append(attrs, attribute.Int("process.pid", s.Process))
	}
	if s.OS != "" {
		// Go's GOOS names are the values os.type defines.
		attrs = append(attrs, attribute.String("os.type", s.OS))
	}
	if s.Arch != "" {
		attrs = append(attrs, attribute.String("host.arch", hostArch(s.Arch)))
	}
	// Later values win in an attribute set: the process's own Resource
	// over our defaults, the session's fields over everything.
	for _, kv := range s.Resource {
		attrs = append(attrs, attribute.KeyValue{Key: attribute.Key(kv.Key), Value: value(kv.Value)})
	}
	attrs = append(attrs, SessionIDKey.String(s.ID.String()))
	if s.Label != "" {
		attrs = append(attrs, spanbridge.SessionLabelKey.String(s.Label))
	}
	if s.Version != "" {
		attrs = append(attrs, SessionVersionKey.String(s.Version))
	}
	return resource.NewSchemaless(attrs...)
}

// hostArch maps a GOARCH to the value host.arch defines where the two
// differ.
func hostArch(goarch string) string {
	switch goarch {
	case "386":
		return "x86"
	case "arm":
		return "arm32"
	case "ppc64le":
		return "ppc64"
	}
	return goarch
}

// Span returns the span a stored record replays as, under the Resource of
// its session (see Resource): its original trace, span and parent ids
// (derived from the stamp when the record has none), name, attributes plus
// records.kind and records.seq, status, events and instrumentation scope;
// it starts at the session's start plus the record's offset and ends wall
// later. Records have no span kind; every span is internal.
func Span(res *resource.Resource, kind string, rec sessions.Stamped[sessions.Record]) sdktrace.ReadOnlySpan {
	return stub(res, kind, rec).Snapshot()
}

func stub(res *resource.Resource, kind string, rec sessions.Stamped[sessions.Record]) tracetest.SpanStub {
	b := rec.Record
	start := time.Unix(0, int64(rec.Stamp.Session)).Add(rec.Stamp.Offset)
	tid := trace.TraceID(b.TraceID)
	if !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], uint64(rec.Stamp.Session))
	}
	sid := trace.SpanID(b.SpanID)
	if !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rec.Stamp.Seq+1)
	}
	var parent trace.SpanContext
	if !b.ParentSpanID.IsZero() {
		parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    tid,
			SpanID:     trace.SpanID(b.ParentSpanID),
			TraceFlags: trace.FlagsSampled,
		})
	}

	attrs := make([]attribute.KeyValue, 0, len(b.Attributes)+2)
	for _, kv := range b.Attributes {
		attrs = append(attrs, attribute.KeyValue{Key: attribute.Key(kv.Key), Value: value(kv.Value)})
	}
	attrs = append(attrs, spanbridge.Kind(kind), SeqKey.Int64(int64(rec.Stamp.Seq)))

	var events []sdktrace.Event
	if len(b.Events) > 0 {
		events = make([]sdktrace.Event, len(b.Events))
		for i, e := range b.Events {
			events[i] = sdktrace.Event{Name: e.Name, Time: start.Add(e.Offset), Attributes: attributes(e.Attributes)}
		}
	}

	return tracetest.SpanStub{
		Name: b.Name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    tid,
			SpanID:     sid,
			TraceFlags: trace.FlagsSampled,
		}),
		Parent:               parent,
		SpanKind:             trace.SpanKindInternal,
		StartTime:            start,
		EndTime:              start.Add(b.Wall),
		Attributes:           attrs,
		Events:               events,
		Status:               status(b.Status),
		Resource:             res,
		InstrumentationScope: instrumentation.Scope{Name: b.Scope.Name, Version: b.Scope.Version},
	}
}

func status(s sessions.Status) sdktrace.Status {
	switch s.Code {
	case "error":
		return sdktrace.Status{Code: codes.Error, Description: s.Description}
	case "ok":
		return sdktrace.Status{Code: codes.Ok}
	}
	return sdktrace.Status{Code: codes.Unset}
}

func attributes(a sessions.Attrs) []attribute.KeyValue {
	if len(a) == 0 {
		return nil
	}
	out := make([]attribute.KeyValue, len(a))
	for i, kv := range a {
		out[i] = attribute.KeyValue{Key: attribute.Key(kv.Key), Value: value(kv.Value)}
	}
	return out
}

// value converts a stored attribute value back to an OpenTelemetry one:
// the inverse of spanbridge.Value for every type a record holds.
func value(v sessions.Value) attribute.Value {
	switch x := v.Any().(type) {
	case bool:
		return attribute.BoolValue(x)
	case int64:
		return attribute.Int64Value(x)
	case float64:
		return attribute.Float64Value(x)
	case string:
		return attribute.StringValue(x)
	case []bool:
		return attribute.BoolSliceValue(x)
	case []int64:
		return attribute.Int64SliceValue(x)
	case []float64:
		return attribute.Float64SliceValue(x)
	case []string:
		return attribute.StringSliceValue(x)
	}
	return attribute.Value{} // no value: OTLP sends it as an empty AnyValue
}
