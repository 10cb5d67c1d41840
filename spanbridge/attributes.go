package spanbridge

import (
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// The attribute keys of the records contract.
const (
	// KindKey names a span's record kind. A span without it is a mark.
	KindKey = attribute.Key("records.kind")
	// EffectKey says whether a span accompanies a change: "changed" or
	// "observed" (the default).
	EffectKey = attribute.Key("records.effect")
	// FullPrefix starts the key of a heavy attribute, kept only at level
	// full and stored without the prefix.
	FullPrefix = "records.full."
	// SessionLabelKey is a Resource attribute naming what the process is
	// doing; the exporter's WithLabel option and Label method take
	// precedence over it.
	SessionLabelKey = attribute.Key("records.session.label")
	// InvalidKindKey is set on the mark a span with an invalid kind is
	// stored as, holding the kind it gave (cut to 256 bytes).
	InvalidKindKey = attribute.Key("records.invalid_kind")
)

// The attribute keys a record carries when it is a span again (see Span
// and Resource), beside those it was recorded with: where the record sat,
// which a backend receiving the replayed span has no other way to know.
const (
	// SessionIDKey is a Resource attribute: the session's id, in decimal,
	// the form `records dump --session` takes. A string, because an id is
	// a nanosecond timestamp near 1.7e18, beyond what a JavaScript UI's
	// numbers hold exactly.
	SessionIDKey = attribute.Key("records.session.id")
	// SessionVersionKey is a Resource attribute: the otelrecords version
	// that wrote the session.
	SessionVersionKey = attribute.Key("records.session.version")
	// SeqKey is a span attribute: the record's seq in its session, where
	// it sits among the session's records across every kind.
	SeqKey = attribute.Key("records.seq")
)

// The attribute keys a span carries, beside those above, so that the
// record it was comes back exactly (FromSpan, FromResource): the fields of
// a record and of a session row that a span or a Resource has no place
// for, or shows otherwise. docs/MAPPING.md §8.2 lists them.
const (
	// InputsKey is a span attribute: the record's Inputs (string array),
	// the keys of the attributes it started with; absent when the record
	// does not know them.
	InputsKey = attribute.Key("records.inputs")
	// SpanKindKey is a span attribute: the record's span kind as stored,
	// sent only when the span's kind cannot say it ("" for a record that
	// does not know its kind, which is sent as internal).
	SpanKindKey = attribute.Key("records.span_kind")
	// DerivedIDsKey is a span attribute: which ids of the span ("trace_id",
	// "span_id") Span made up from the stamp because the record had none.
	DerivedIDsKey = attribute.Key("records.derived_ids")

	// SessionStartedKey is a Resource attribute: the session row's
	// started_unix_ms. A Resource carries it, and the other row keys
	// below, only for a session whose row the store holds.
	SessionStartedKey = attribute.Key("records.session.started_unix_ms")
	// SessionProcessKey, SessionOSKey and SessionArchKey are Resource
	// attributes: the row's process, os and arch as stored (process.pid,
	// os.type and host.arch show them as OpenTelemetry names them, and
	// the process's own Resource may say otherwise).
	SessionProcessKey = attribute.Key("records.session.process")
	SessionOSKey      = attribute.Key("records.session.os")
	SessionArchKey    = attribute.Key("records.session.arch")
	// SessionResourceKey is a Resource attribute: the keys of the row's
	// own Resource attributes, in their order (a Resource sorts its
	// attributes, and mixes in others). A row attribute whose value the
	// Resource shows otherwise (a key the session's own fields above
	// override) is sent again as SessionResourceKey + "." + its key.
	SessionResourceKey = attribute.Key("records.session.resource")
)

// The attribute keys a record carries when the span it was made of gave a
// time no record can take (recorder.SpanTimes: before 1970, from 2262 on,
// an end before its start or 500,000 hours after it): the span's own times,
// as RFC 3339 text with nanoseconds in UTC ("" for a zero time), so that
// nothing the span said is lost (docs/FORMAT.md §3.5). Whoever takes spans
// from elsewhere adds them: the Importer, records pull.
const (
	// SpanStartKey holds the span's own start.
	SpanStartKey = "records.span.start"
	// SpanEndKey holds the span's own end.
	SpanEndKey = "records.span.end"
)

// SenderTimes returns the attributes that keep a span's own start and end
// beside the record that could not take them (SpanStartKey, SpanEndKey).
func SenderTimes(start, end time.Time) sessions.Attrs {
	text := func(t time.Time) sessions.Value {
		if t.IsZero() {
			return sessions.StringValue("")
		}
		return sessions.StringValue(t.UTC().Format(time.RFC3339Nano))
	}
	return sessions.Attrs{{Key: SpanStartKey, Value: text(start)}, {Key: SpanEndKey, Value: text(end)}}
}

// The values of EffectKey.
const (
	// EffectChanged is the effect of a span that accompanies a change to
	// the store's caches; the first one keeps its session.
	EffectChanged = "changed"
	// EffectObserved is the effect of a span that changed nothing, and of
	// a span that says nothing.
	EffectObserved = "observed"
)

// Kind returns the attribute that makes a span a record of the given kind.
func Kind(kind string) attribute.KeyValue { return KindKey.String(kind) }

// Changed returns the attribute that marks a span as accompanying a change,
// which keeps its session.
func Changed() attribute.KeyValue { return EffectKey.String(EffectChanged) }

// Observed returns the attribute that marks a span as changing nothing (the
// default, for spans that say nothing).
func Observed() attribute.KeyValue { return EffectKey.String(EffectObserved) }

// Full returns a heavy attribute: kv under the key records.full.<key>,
// kept only at level full.
func Full(kv attribute.KeyValue) attribute.KeyValue {
	return attribute.KeyValue{Key: attribute.Key(FullPrefix + string(kv.Key)), Value: kv.Value}
}

// SessionLabel returns the Resource attribute that labels a session.
func SessionLabel(label string) attribute.KeyValue { return SessionLabelKey.String(label) }

// Record starts nothing: it returns the span start options that make a span
// a record of kind, with the given extra attributes, for
// tracer.Start(ctx, name, spanbridge.Record(kind, attrs...)...). The
// attributes are the record's inputs (sessions.Record.Inputs); those set
// while the span runs are its outcome.
//
// The span starts with records.kind and records.effect=observed before
// attrs (Changed among attrs wins), so that a later MarkChanged updates a
// key the span has: the SDK drops new keys once a span holds its limit of
// attributes (128 by default), but still updates existing ones, and a
// change that keeps the session is never lost that way.
func Record(kind string, attrs ...attribute.KeyValue) []trace.SpanStartOption {
	return []trace.SpanStartOption{trace.WithAttributes(Kind(kind), Observed()), trace.WithAttributes(attrs...)}
}

// Mark starts nothing: it returns the span start options that make a span
// an explicit mark (records.kind=marks), a phase the caller named, with
// the given extra attributes, for tracer.Start(ctx, name,
// spanbridge.Mark(attrs...)...). An explicit mark is always recorded; a
// span with neither records.kind nor records.effect is an implicit mark,
// which the exporter records per its marks policy (by default only when a
// record starts inside it).
func Mark(attrs ...attribute.KeyValue) []trace.SpanStartOption {
	return Record(sessions.MarksKind, attrs...)
}

// MarkChanged sets the records.effect attribute of a span to changed: call
// it on the span of a tune or a compile once it has stored something. On a
// span started without Record that already holds its limit of attributes,
// the SDK drops it (the exporter reports that once; see
// ErrAttributesDropped).
func MarkChanged(span trace.Span) { span.SetAttributes(Changed()) }

func isControl(k attribute.Key) bool {
	return k == KindKey || k == EffectKey
}

func isHeavy(k attribute.Key) bool { return strings.HasPrefix(string(k), FullPrefix) }

// AtLevel returns the attributes of kvs that leave the process at level:
// every one at sessions.LevelFull, all but the heavy ones (records.full.*)
// below it. It is the one place that rule is written, for the records Map
// makes and the spans the exporter forwards alike, so the level says the
// same thing about both. Heavy attributes keep their prefix here: Map
// strips it from the keys it stores, a forwarded span keeps it.
//
// It returns kvs itself when it leaves nothing out, so a caller can tell
// by the length, and a new slice otherwise; kvs is never modified.
func AtLevel(kvs []attribute.KeyValue, level sessions.Level) []attribute.KeyValue {
	if level >= sessions.LevelFull {
		return kvs
	}
	heavy := 0
	for _, kv := range kvs {
		if isHeavy(kv.Key) {
			heavy++
		}
	}
	if heavy == 0 {
		return kvs
	}
	out := make([]attribute.KeyValue, 0, len(kvs)-heavy)
	for _, kv := range kvs {
		if !isHeavy(kv.Key) {
			out = append(out, kv)
		}
	}
	return out
}
