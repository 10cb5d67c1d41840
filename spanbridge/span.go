package spanbridge

import (
	"encoding/binary"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// Span returns the span a stored record was, under the Resource of its
// session (see Resource): the inverse of Map, for replaying a store to an
// OpenTelemetry backend or exporting it as OTLP. The span has its original
// trace, span and parent ids, name, attributes, status, events and
// instrumentation scope, plus the attributes records.kind (marks too) and
// records.seq, which say where the record sat, and those that say what a
// span has no place for (records.effect=changed, records.inputs,
// records.span_kind, records.derived_ids: see FromSpan, its inverse). It
// starts at the session's start plus the record's offset and ends wall
// later, to the nanosecond.
//
// A record without trace or span ids (written by a sessions.Recorder
// driven directly, not from a span) gets ids derived from its stamp, so it
// comes back the same every time: the trace id is the session id's 8
// bytes, big-endian, then 8 zero bytes; the span id is the record's seq +
// 1, big-endian.
//
// The span comes back with its kind, trace state, links and dropped
// counts; a record that does not know its kind (written before records
// kept it, or not made from a span) comes back internal. Heavy attributes
// come back without their records.full. prefix, as they were stored. A
// linked span context is not sampled (records do not keep its flags).
func Span(res *resource.Resource, kind string, rec sessions.Stamped[sessions.Record]) sdktrace.ReadOnlySpan {
	b := rec.Record
	attrs := appendAttributes(make([]attribute.KeyValue, 0, len(b.Attributes)+maxExtra), b.Attributes)
	f := Fields(attrs, kind, rec)
	attrs = f.Extra
	var parent trace.SpanContext
	if f.Parent.IsValid() {
		parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    f.TraceID,
			SpanID:     f.Parent,
			TraceFlags: trace.FlagsSampled,
		})
	}

	var links []sdktrace.Link
	if len(b.Links) > 0 {
		links = make([]sdktrace.Link, len(b.Links))
		for i, l := range b.Links {
			links[i] = sdktrace.Link{
				SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
					TraceID:    trace.TraceID(l.TraceID),
					SpanID:     trace.SpanID(l.SpanID),
					TraceState: traceState(l.TraceState),
				}),
				Attributes: Attributes(l.Attributes),
			}
		}
	}

	var events []sdktrace.Event
	if len(b.Events) > 0 {
		events = make([]sdktrace.Event, len(b.Events))
		for i, e := range b.Events {
			events[i] = sdktrace.Event{Name: e.Name, Time: f.Start.Add(e.Offset), Attributes: Attributes(e.Attributes)}
		}
	}

	// A SpanStub is the one way outside the SDK to build a ReadOnlySpan
	// with given ids and times; its Snapshot copies no slice.
	return tracetest.SpanStub{
		Name: b.Name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    f.TraceID,
			SpanID:     f.SpanID,
			TraceFlags: trace.FlagsSampled,
			TraceState: f.TraceState,
		}),
		Parent:               parent,
		SpanKind:             f.Kind,
		StartTime:            f.Start,
		EndTime:              f.End,
		Attributes:           attrs,
		Events:               events,
		Links:                links,
		Status:               f.Status,
		DroppedAttributes:    b.DroppedAttributes,
		DroppedEvents:        b.DroppedEvents,
		DroppedLinks:         b.DroppedLinks,
		Resource:             res,
		InstrumentationScope: instrumentation.Scope{Name: b.Scope.Name, Version: b.Scope.Version},
	}.Snapshot()
}

// SpanFields are the parts of the span Span makes of a record that are
// not the record's own fields as they stand: its ids, trace state, kind,
// times and status as a span has them, and the attributes Span puts after
// the record's own. A caller that builds spans of another shape straight
// from records (the Collector's records processor builds pdata) builds
// the same span as Span from these and the record, without a
// ReadOnlySpan in between.
type SpanFields struct {
	// TraceID and SpanID are the record's ids, or those derived from its
	// stamp (see Span).
	TraceID trace.TraceID
	SpanID  trace.SpanID
	// Parent is the parent's span id; zero for a root.
	Parent trace.SpanID
	// TraceState is the record's trace state; empty if it does not parse.
	TraceState trace.TraceState
	// Kind is the span kind; internal for a record that names none.
	Kind trace.SpanKind
	// Start is the session's start plus the record's offset; End is Start
	// plus its wall time. An event's time is Start plus its offset.
	Start, End time.Time
	// Status is the record's status as a span's.
	Status sdktrace.Status
	// Extra is the dst given to Fields with the attributes that follow
	// the record's own appended: records.kind, records.seq, and what a
	// span has no place for (at most 6).
	Extra []attribute.KeyValue
}

// maxExtra is the most attributes Fields appends.
const maxExtra = 6

// Fields returns the SpanFields of the span Span makes of rec, a record
// of kind, appending the attributes that follow the record's own to dst:
// a caller that makes many spans reuses one dst, and allocates nothing
// for them.
func Fields(dst []attribute.KeyValue, kind string, rec sessions.Stamped[sessions.Record]) SpanFields {
	b := rec.Record
	start := sessions.Session{ID: rec.Stamp.Session}.Started().Add(rec.Stamp.Offset)
	var derived []string
	tid := trace.TraceID(b.TraceID)
	if !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], uint64(rec.Stamp.Session))
		derived = append(derived, derivedTraceID)
	}
	sid := trace.SpanID(b.SpanID)
	if !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rec.Stamp.Seq+1)
		derived = append(derived, derivedSpanID)
	}
	extra := append(dst, Kind(kind), SeqKey.Int64(int64(rec.Stamp.Seq)))
	// What the span has no place for, so that FromSpan gives the record
	// back exactly: each only where the record has it.
	if b.Effect == sessions.Changed {
		extra = append(extra, Changed())
	}
	if b.Inputs != nil {
		extra = append(extra, InputsKey.StringSlice(b.Inputs))
	}
	if spanKind(b.SpanKind).String() != b.SpanKind {
		extra = append(extra, SpanKindKey.String(b.SpanKind))
	}
	if derived != nil {
		extra = append(extra, DerivedIDsKey.StringSlice(derived))
	}
	return SpanFields{
		TraceID:    tid,
		SpanID:     sid,
		Parent:     trace.SpanID(b.ParentSpanID),
		TraceState: traceState(b.TraceState),
		Kind:       spanKind(b.SpanKind),
		Start:      start,
		End:        start.Add(b.Wall),
		Status:     spanStatus(b.Status),
		Extra:      extra,
	}
}

// spanKinds are the span kinds by the names records store them under,
// which are trace.SpanKind's own (String).
var spanKinds = map[string]trace.SpanKind{
	trace.SpanKindInternal.String(): trace.SpanKindInternal,
	trace.SpanKindServer.String():   trace.SpanKindServer,
	trace.SpanKindClient.String():   trace.SpanKindClient,
	trace.SpanKindProducer.String(): trace.SpanKindProducer,
	trace.SpanKindConsumer.String(): trace.SpanKindConsumer,
}

// spanKind returns the span kind a record names; internal, as the SDK
// makes a span that says none, for a record that names none or one it
// does not know.
func spanKind(name string) trace.SpanKind {
	if k, ok := spanKinds[name]; ok {
		return k
	}
	return trace.SpanKindInternal
}

// traceState parses a stored trace state; one that does not parse (a
// store is untrusted input) comes back empty rather than failing the span.
func traceState(s string) trace.TraceState {
	if s == "" {
		return trace.TraceState{}
	}
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		return trace.TraceState{}
	}
	return ts
}

// Resource returns the Resource a session's spans come back under (see
// Span): the Resource attributes its process had (service.name, ...), the
// process fields as OpenTelemetry semantic conventions name them
// (process.pid, os.type, host.arch; the Resource's own values win), and
// the session's fields records.session.id, records.session.label (when it
// has one) and records.session.version. A session whose Resource had no
// service.name gets "unknown_service", as the SDK names a service that did
// not say.
//
// It also carries the session row as stored, so that FromResource gives
// it back exactly: records.session.started_unix_ms, .process, .os, .arch,
// and the keys of the row's own Resource attributes in their order
// (records.session.resource), with the value of any of them the Resource
// shows otherwise. s is a row the store holds; the Resource of records
// whose row is gone is OrphanResource.
func Resource(s sessions.Session) *resource.Resource {
	attrs := sessionAttributes(s)
	attrs = append(attrs,
		SessionStartedKey.Int64(s.StartedUnixMs),
		SessionProcessKey.Int(s.Process),
		SessionOSKey.String(s.OS),
		SessionArchKey.String(s.Arch),
	)
	if len(s.Resource) > 0 {
		keys := make([]string, len(s.Resource))
		for i, kv := range s.Resource {
			keys[i] = kv.Key
		}
		attrs = append(attrs, SessionResourceKey.StringSlice(keys))
		// Later values win in an attribute set: a row attribute that a
		// session field overrode is sent again under a key of its own.
		shown := attribute.NewSet(attrs...)
		for _, kv := range s.Resource {
			v := AttributeValue(kv.Value)
			if got, ok := shown.Value(attribute.Key(kv.Key)); !ok || !sameValue(got, v) {
				attrs = append(attrs, attribute.KeyValue{Key: SessionResourceKey + "." + attribute.Key(kv.Key), Value: v})
			}
		}
	}
	return resource.NewSchemaless(attrs...)
}

// OrphanResource returns the Resource the records of a session whose row
// the store no longer holds come back under (a process whose session
// another process pruned while it ran): service.name "unknown_service"
// (unless s.Resource names another: replay --service gives one), the
// attributes of s.Resource and records.session.id. Only s.ID and
// s.Resource are read. FromResource reads it as a session without a row.
func OrphanResource(s sessions.Session) *resource.Resource {
	return resource.NewSchemaless(sessionAttributes(sessions.Session{ID: s.ID, Resource: s.Resource})...)
}

// sessionAttributes returns the attributes of a session's Resource that a
// backend shows: its process's Resource and the session's fields.
func sessionAttributes(s sessions.Session) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, len(s.Resource)+12)
	attrs = append(attrs, semconv.ServiceName("unknown_service"))
	if s.Process != 0 {
		attrs = append(attrs, semconv.ProcessPID(s.Process))
	}
	if s.OS != "" {
		// Go's GOOS names are the values os.type defines.
		attrs = append(attrs, semconv.OSTypeKey.String(s.OS))
	}
	if s.Arch != "" {
		attrs = append(attrs, semconv.HostArchKey.String(hostArch(s.Arch)))
	}
	// Later values win in an attribute set: the process's own Resource
	// over our defaults, the session's fields over everything.
	attrs = appendAttributes(attrs, s.Resource)
	attrs = append(attrs, SessionIDKey.String(s.ID.String()))
	// An empty label or version is sent too where the process's Resource
	// has the key, which would otherwise pass for the session's.
	if _, has := s.Resource.Get(string(SessionLabelKey)); s.Label != "" || has {
		attrs = append(attrs, SessionLabelKey.String(s.Label))
	}
	if _, has := s.Resource.Get(string(SessionVersionKey)); s.Version != "" || has {
		attrs = append(attrs, SessionVersionKey.String(s.Version))
	}
	return attrs
}

// sameValue reports whether two attribute values are the same: same type,
// same text (Emit writes a float so that it parses back the same).
func sameValue(a, b attribute.Value) bool {
	return a.Type() == b.Type() && a.Emit() == b.Emit()
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
