package sessions

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
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
