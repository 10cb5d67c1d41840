package sessions

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// MarksKind is the kind of a mark: a named stretch of the caller's work
// (an OpenTelemetry span without a records.kind attribute). Everything
// stamped while a mark is open lies inside it: its seq is lower, and its
// offset + wall covers theirs.
const MarksKind = "marks"

// Record is the body of a record: what a reader needs to explain the span
// it came from. Marks fill at least Name (their label) and Wall.
type Record struct {
	// Name is the span's name; a mark's label.
	Name string `cbor:"name"`
	// Wall is how long the span ran, from start to end.
	Wall time.Duration `cbor:"wall_ns"`
	// Attributes are the span's attributes, without the records.* control
	// attributes, and with heavy (records.full.*) ones only at LevelFull,
	// stored without their prefix.
	Attributes Attrs `cbor:"attrs,omitzero"`
	// Status is the span's status.
	Status Status `cbor:"status,omitzero"`
	// Events are the span's events, in order.
	Events []Event `cbor:"events,omitempty"`
	// TraceID is the span's trace id.
	TraceID TraceID `cbor:"trace_id,omitzero"`
	// SpanID is the span's id.
	SpanID SpanID `cbor:"span_id,omitzero"`
	// ParentSpanID is the parent span's id; zero for a root span.
	ParentSpanID SpanID `cbor:"parent_span_id,omitzero"`
	// Scope is the instrumentation scope that created the span.
	Scope Scope `cbor:"scope,omitzero"`

	// SpanKind is the span's kind as OpenTelemetry names it: "internal",
	// "server", "client", "producer" or "consumer"; "" when it is not
	// known (a record not made from a span, or written before records
	// kept it).
	SpanKind string `cbor:"span_kind,omitempty"`
	// TraceState is the span's W3C trace state (the tracestate header's
	// value), "" when it has none.
	TraceState string `cbor:"trace_state,omitempty"`
	// Links are the span's links to other spans, in order.
	Links []Link `cbor:"links,omitempty"`
	// DroppedAttributes, DroppedEvents and DroppedLinks count what the
	// span lost to its provider's limits (sdktrace.SpanLimits): a record
	// with DroppedAttributes above zero may lack attributes it was given.
	DroppedAttributes int `cbor:"dropped_attrs,omitempty"`
	DroppedEvents     int `cbor:"dropped_events,omitempty"`
	DroppedLinks      int `cbor:"dropped_links,omitempty"`

	// Effect is whether the span accompanied a change (its
	// records.effect). Records written before records kept it read as
	// Observed.
	Effect Effect `cbor:"effect,omitzero"`
	// Inputs are the keys of Attributes the span started with (given to
	// tracer.Start: what it was asked to do, e.g. the key to tune and
	// its candidates); the other attributes were set while it ran (its
	// outcome: the winner). Nil when not known (and for a record without
	// attributes); empty, not nil, when no attribute is an input. See
	// IsInput.
	Inputs []string `cbor:"inputs,omitzero"`
}

// IsInput reports whether the attribute key is one the span started with
// (an input) rather than one set while it ran (an outcome).
func (r *Record) IsInput(key string) bool {
	return slices.Contains(r.Inputs, key)
}

// Link is a span's link to another span: a batch's span linked to the
// requests it serves, say.
type Link struct {
	TraceID    TraceID `cbor:"trace_id,omitzero"`
	SpanID     SpanID  `cbor:"span_id,omitzero"`
	TraceState string  `cbor:"trace_state,omitempty"`
	Attributes Attrs   `cbor:"attrs,omitzero"`
}

// MarshalCBOR encodes the effect as the text of records.effect,
// "changed"; Observed, the zero value, is left out of a record.
func (e Effect) MarshalCBOR() ([]byte, error) { return encMode.Marshal(e.String()) }

// UnmarshalCBOR decodes the text of an effect: "changed" is Changed, any
// other text (observed, or a value a later writer defines) is Observed,
// as a span's records.effect is read.
func (e *Effect) UnmarshalCBOR(b []byte) error {
	var s string
	if err := decMode.Unmarshal(b, &s); err != nil {
		return err
	}
	*e = effectOf(s)
	return nil
}

func effectOf(s string) Effect {
	if s == "changed" {
		return Changed
	}
	return Observed
}

// Status is a span's status: "unset", "ok" or "error", and a description.
type Status struct {
	Code        string `cbor:"code,omitempty" json:"code"`
	Description string `cbor:"description,omitempty" json:"description,omitempty"`
}

// Event is a timed annotation of a span.
type Event struct {
	// Name is the event's name.
	Name string `cbor:"name" json:"name"`
	// Offset is the time from the span's start to the event.
	Offset time.Duration `cbor:"offset_ns" json:"offset_ns"`
	// Attributes are the event's attributes.
	Attributes Attrs `cbor:"attrs,omitzero" json:"attributes,omitempty"`
}

// Scope is an OpenTelemetry instrumentation scope.
type Scope struct {
	Name    string `cbor:"name,omitempty" json:"name,omitempty"`
	Version string `cbor:"version,omitempty" json:"version,omitempty"`
}

// TraceID is an OpenTelemetry trace id, stored as a 16-byte CBOR byte
// string.
type TraceID [16]byte

// IsZero reports whether the id is all zeros (no trace).
func (t TraceID) IsZero() bool { return t == TraceID{} }

// String returns the id in lowercase hex, or "" when it is zero.
func (t TraceID) String() string {
	if t.IsZero() {
		return ""
	}
	return hex.EncodeToString(t[:])
}

// MarshalJSON encodes the id as a hex string ("" when zero).
func (t TraceID) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalCBOR decodes a 16-byte string; any other length is an error, so
// a damaged id is not silently padded or cut.
func (t *TraceID) UnmarshalCBOR(b []byte) error { return unmarshalID(b, t[:]) }

// SpanID is an OpenTelemetry span id, stored as an 8-byte CBOR byte string.
type SpanID [8]byte

// IsZero reports whether the id is all zeros (no span: a root's parent).
func (s SpanID) IsZero() bool { return s == SpanID{} }

// String returns the id in lowercase hex, or "" when it is zero.
func (s SpanID) String() string {
	if s.IsZero() {
		return ""
	}
	return hex.EncodeToString(s[:])
}

// MarshalJSON encodes the id as a hex string ("" when zero).
func (s SpanID) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalCBOR decodes an 8-byte string; any other length is an error.
func (s *SpanID) UnmarshalCBOR(b []byte) error { return unmarshalID(b, s[:]) }

func unmarshalID(b []byte, dst []byte) error {
	var raw []byte
	if err := decMode.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) != len(dst) {
		return fmt.Errorf("id of %d bytes, want %d", len(raw), len(dst))
	}
	copy(dst, raw)
	return nil
}
