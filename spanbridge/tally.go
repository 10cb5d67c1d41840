package spanbridge

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// A part of a session's tally (tallies.Tally, docs/FORMAT.md §3.6) goes
// out as a span of its own, under the session's Resource, so that every
// path that carries records carries the counts of what was let go too:
// the Collector's records processor hands it on, `records replay` sends
// it, and `records pull` and an Importer (the Collector's records
// exporter, a processor downstream of another) take it back as the part
// it was, not as a record (docs/MAPPING.md §8.6).
const (
	// TallyName is the name of a tally's span.
	TallyName = "records.tally"
	// TallyKey is a span attribute: the part's value as a store holds it
	// (its CBOR, tallies.Tally.MarshalCBOR), in standard base64 with
	// padding. Text, not an OTLP bytes value: the OpenTelemetry API has
	// no bytes attribute, and readers of OTLP (an Importer, Jaeger's
	// OTLP JSON) give bytes back as this very text.
	TallyKey = attribute.Key("records.tally")
	// TallyPartKey is a span attribute: the part, in decimal (a string,
	// as records.session.id is: a part may be past what an int64 or a
	// JavaScript number holds).
	TallyPartKey = attribute.Key("records.tally.part")
	// TallyCountKey is a span attribute: how many records the part
	// counts (tallies.Tally.Count). A part is written again as it
	// counts, and its counts only grow: of the spans of one session's
	// part, a reader keeps the one with the highest count.
	TallyCountKey = attribute.Key("records.tally.count")
)

// TallyScope is the instrumentation scope of a tally's span.
var TallyScope = instrumentation.Scope{Name: "github.com/otelrecords/otelrecords/sessions"}

// TallySpanFields are the fields of the span a part of a tally goes out
// as, for a caller that builds spans of another shape (the Collector's
// records processor builds pdata) the same as TallySpan.
type TallySpanFields struct {
	// TraceID is derived from the session and the part, SpanID from the
	// value: every version of a part is a span of its own, in one trace.
	TraceID trace.TraceID
	SpanID  trace.SpanID
	// Start and End are the session's start: a tally has no time of its
	// own, and a backend finds it where it finds the session.
	Start, End time.Time
	// Attributes are TallyKey, TallyPartKey and TallyCountKey.
	Attributes []attribute.KeyValue
}

// TallyFields returns the fields of the span of t, a part of a tally,
// whose value as stored is value (t.MarshalCBOR's).
func TallyFields(t tallies.Tally, value []byte) TallySpanFields {
	var f TallySpanFields
	var b [8 + 8 + len(TallyName)]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.Session))
	binary.BigEndian.PutUint64(b[8:16], t.Part)
	copy(b[16:], TallyName)
	th := sha256.Sum256(b[:])
	copy(f.TraceID[:], th[:16])
	vh := sha256.Sum256(value)
	copy(f.SpanID[:], vh[:8])
	if !f.SpanID.IsValid() {
		f.SpanID[7] = 1
	}
	if !f.TraceID.IsValid() {
		f.TraceID[15] = 1
	}
	f.Start = sessions.Session{ID: t.Session}.Started()
	f.End = f.Start
	f.Attributes = []attribute.KeyValue{
		TallyKey.String(base64.StdEncoding.EncodeToString(value)),
		TallyPartKey.String(strconv.FormatUint(t.Part, 10)),
		TallyCountKey.Int64(t.Count()),
	}
	return f
}

// TallySpan returns the span a part of a tally goes out as, under res,
// its session's Resource (Resource, or OrphanResource for a session
// whose row is gone): named TallyName, its value in TallyKey, its part in
// TallyPartKey, its count in TallyCountKey; trace id from the session
// and part, span id from the value, so that replaying it twice sends the
// same span. FromTallySpan is its inverse.
func TallySpan(res *resource.Resource, t tallies.Tally) (sdktrace.ReadOnlySpan, error) {
	v, err := t.MarshalCBOR()
	if err != nil {
		return nil, err
	}
	f := TallyFields(t, v)
	return tracetest.SpanStub{
		Name: TallyName,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: f.TraceID, SpanID: f.SpanID, TraceFlags: trace.FlagsSampled,
		}),
		SpanKind:             trace.SpanKindInternal,
		StartTime:            f.Start,
		EndTime:              f.End,
		Attributes:           f.Attributes,
		Resource:             res,
		InstrumentationScope: TallyScope,
	}.Snapshot(), nil
}

// ErrNotTally is matched by the error FromTallySpan returns for a span
// that is not a tally's.
var ErrNotTally = errors.New("otelrecords: not a tally")

// IsTallySpan reports whether a span with this name and these attributes
// is a tally's (TallySpan): named TallyName, with TallyKey.
func IsTallySpan(name string, attrs []attribute.KeyValue) bool {
	if name != TallyName {
		return false
	}
	for _, kv := range attrs {
		if kv.Key == TallyKey {
			return true
		}
	}
	return false
}

// FromTallySpan returns the part of a tally a span carries (TallySpan):
// its value decoded within a reader's limits (tallies.Decode), and
// the value as the span carried it. session is the id of the session
// whose Resource the span came under (FromResource), which the value
// must name, as it must the part TallyPartKey names. A span that is not
// a tally's gives an error matching ErrNotTally; one whose value does not
// decode, or names another session or part, another error.
func FromTallySpan(session sessions.SessionID, name string, attrs []attribute.KeyValue) (tallies.Tally, []byte, error) {
	var value, part attribute.Value
	for _, kv := range attrs {
		switch kv.Key {
		case TallyKey:
			value = kv.Value
		case TallyPartKey:
			part = kv.Value
		}
	}
	if name != TallyName || value.Type() != attribute.STRING {
		return tallies.Tally{}, nil, fmt.Errorf("%w: span %q has no %s", ErrNotTally, name, TallyKey)
	}
	v, err := base64.StdEncoding.DecodeString(value.AsString())
	if err != nil {
		return tallies.Tally{}, nil, fmt.Errorf("%s: %w", TallyKey, err)
	}
	p, err := strconv.ParseUint(part.AsString(), 10, 64)
	if err != nil || part.Type() != attribute.STRING {
		return tallies.Tally{}, nil, fmt.Errorf("a tally's span without %s", TallyPartKey)
	}
	t, err := tallies.Decode(v)
	if err != nil {
		return tallies.Tally{}, nil, err
	}
	if t.Session != session || t.Part != p {
		return tallies.Tally{}, nil, fmt.Errorf("the tally of session %d part %d in the span of session %d part %d", t.Session, t.Part, session, p)
	}
	return t, v, nil
}
