package tracefile

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// This file is OTLP's trace messages in the protobuf JSON mapping, as
// OTLP/HTTP takes them, made from spans as the OTLP exporter makes its
// protobuf messages (its internal/tracetransform): the same fields from
// the same span methods. The mapping's rules, which the types follow:
//
//   - keys are the fields' lowerCamelCase names, written here in
//     alphabetical order at every level;
//   - a scalar field at its zero value (0, "", empty bytes or list) is
//     left out; a message field that is set is written even when empty
//     ({}); of a oneof (AnyValue's value), the member set is written
//     whatever its value;
//   - 64-bit integers are strings, enums numbers; a double is a number,
//     NaN and the infinities the strings "NaN", "Infinity", "-Infinity";
//   - ids (trace, span and parent span ids) are hex, which OTLP/JSON asks
//     in place of the mapping's base64; other bytes are base64.
//
// cmd/records' tests hold the output to the OTLP exporter's messages
// marshalled by protojson, byte for byte.

type resourceJSON struct {
	Attributes []keyValueJSON `json:"attributes,omitempty"`
}

type scopeJSON struct {
	Attributes []keyValueJSON `json:"attributes,omitempty"`
	Name       string         `json:"name,omitempty"`
	Version    string         `json:"version,omitempty"`
}

type spanJSON struct {
	Attributes             []keyValueJSON `json:"attributes,omitempty"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	DroppedEventsCount     uint32         `json:"droppedEventsCount,omitempty"`
	DroppedLinksCount      uint32         `json:"droppedLinksCount,omitempty"`
	EndTimeUnixNano        string         `json:"endTimeUnixNano,omitempty"`
	Events                 []eventJSON    `json:"events,omitempty"`
	Flags                  uint32         `json:"flags,omitempty"`
	Kind                   int            `json:"kind,omitempty"`
	Links                  []linkJSON     `json:"links,omitempty"`
	Name                   string         `json:"name,omitempty"`
	ParentSpanID           string         `json:"parentSpanId,omitempty"`
	SpanID                 string         `json:"spanId,omitempty"`
	StartTimeUnixNano      string         `json:"startTimeUnixNano,omitempty"`
	Status                 *statusJSON    `json:"status,omitempty"`
	TraceID                string         `json:"traceId,omitempty"`
	TraceState             string         `json:"traceState,omitempty"`
}

type eventJSON struct {
	Attributes             []keyValueJSON `json:"attributes,omitempty"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	Name                   string         `json:"name,omitempty"`
	TimeUnixNano           string         `json:"timeUnixNano,omitempty"`
}

type linkJSON struct {
	Attributes             []keyValueJSON `json:"attributes,omitempty"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	Flags                  uint32         `json:"flags,omitempty"`
	SpanID                 string         `json:"spanId,omitempty"`
	TraceID                string         `json:"traceId,omitempty"`
}

type statusJSON struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

type keyValueJSON struct {
	Key   string    `json:"key,omitempty"`
	Value *anyValue `json:"value,omitempty"`
}

// anyValue is AnyValue: one member set, or none for an empty value.
type anyValue struct {
	ArrayValue  *valuesJSON   `json:"arrayValue,omitempty"`
	BoolValue   *bool         `json:"boolValue,omitempty"`
	BytesValue  *string       `json:"bytesValue,omitempty"`
	DoubleValue *double       `json:"doubleValue,omitempty"`
	IntValue    *string       `json:"intValue,omitempty"`
	KvlistValue *keyValueList `json:"kvlistValue,omitempty"`
	StringValue *string       `json:"stringValue,omitempty"`
}

type valuesJSON struct {
	Values []*anyValue `json:"values,omitempty"`
}

type keyValueList struct {
	Values []keyValueJSON `json:"values,omitempty"`
}

// double is a double as the mapping writes it: NaN and the infinities,
// which JSON numbers cannot be, as strings.
type double float64

func (d double) MarshalJSON() ([]byte, error) {
	switch f := float64(d); {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	default:
		return json.Marshal(f)
	}
}

// Span flags, as OTLP's SpanFlags defines them: the low byte is the W3C
// trace flags; then whether the parent's remoteness is known, and is.
const (
	flagsHasIsRemote = 0x100
	flagsIsRemote    = 0x200
)

func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagsHasIsRemote
	if parent.IsRemote() {
		f |= flagsIsRemote
	}
	return f
}

func unixNano(t interface{ UnixNano() int64 }) string {
	return strconv.FormatUint(uint64(max(0, t.UnixNano())), 10)
}

// clampUint32 is a count as OTLP holds it.
func clampUint32(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

// newSpan is the OTLP span of s.
func newSpan(s sdktrace.ReadOnlySpan) spanJSON {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	st := s.Status()
	out := spanJSON{
		TraceID:                hex.EncodeToString(tid[:]),
		SpanID:                 hex.EncodeToString(sid[:]),
		TraceState:             sc.TraceState().String(),
		Status:                 &statusJSON{Code: statusCode(st.Code), Message: st.Description},
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Kind:                   spanKind(s.SpanKind()),
		Name:                   s.Name(),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: clampUint32(s.DroppedAttributes()),
		DroppedEventsCount:     clampUint32(s.DroppedEvents()),
		DroppedLinksCount:      clampUint32(s.DroppedLinks()),
		Flags:                  spanFlags(sc.TraceFlags(), s.Parent()),
	}
	if out.StartTimeUnixNano == "0" {
		out.StartTimeUnixNano = ""
	}
	if out.EndTimeUnixNano == "0" {
		out.EndTimeUnixNano = ""
	}
	if psid := s.Parent().SpanID(); psid.IsValid() {
		out.ParentSpanID = hex.EncodeToString(psid[:])
	}
	for _, e := range s.Events() {
		ev := eventJSON{Name: e.Name, TimeUnixNano: unixNano(e.Time), Attributes: keyValues(e.Attributes),
			DroppedAttributesCount: clampUint32(e.DroppedAttributeCount)}
		if ev.TimeUnixNano == "0" {
			ev.TimeUnixNano = ""
		}
		out.Events = append(out.Events, ev)
	}
	for _, l := range s.Links() {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, linkJSON{
			TraceID:                hex.EncodeToString(tid[:]),
			SpanID:                 hex.EncodeToString(sid[:]),
			Attributes:             keyValues(l.Attributes),
			DroppedAttributesCount: clampUint32(l.DroppedAttributeCount),
			Flags:                  spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return out
}

func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// spanKind is OTLP's SpanKind of k: the API's numbers, unspecified for
// any other.
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k)
	}
	return 0
}

// newScope is the OTLP InstrumentationScope of sc, nil for the zero scope.
func newScope(sc instrumentation.Scope) *scopeJSON {
	if sc == (instrumentation.Scope{}) {
		return nil
	}
	return &scopeJSON{Name: sc.Name, Version: sc.Version, Attributes: keyValuesOf(sc.Attributes.Iter())}
}

func keyValues(attrs []attribute.KeyValue) []keyValueJSON {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]keyValueJSON, len(attrs))
	for i, kv := range attrs {
		out[i] = keyValueJSON{Key: string(kv.Key), Value: newValue(kv.Value)}
	}
	return out
}

func keyValuesOf(it attribute.Iterator) []keyValueJSON {
	var out []keyValueJSON
	for it.Next() {
		kv := it.Attribute()
		out = append(out, keyValueJSON{Key: string(kv.Key), Value: newValue(kv.Value)})
	}
	return out
}

func newValue(v attribute.Value) *anyValue {
	av := new(anyValue)
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		av.BoolValue = &b
	case attribute.INT64:
		av.IntValue = intValue(v.AsInt64())
	case attribute.FLOAT64:
		d := double(v.AsFloat64())
		av.DoubleValue = &d
	case attribute.STRING:
		s := v.AsString()
		av.StringValue = &s
	case attribute.BYTESLICE:
		s := base64.StdEncoding.EncodeToString(v.AsByteSlice())
		av.BytesValue = &s
	case attribute.BOOLSLICE:
		av.ArrayValue = array(v.AsBoolSlice(), func(b bool) *anyValue { return &anyValue{BoolValue: &b} })
	case attribute.INT64SLICE:
		av.ArrayValue = array(v.AsInt64Slice(), func(n int64) *anyValue { return &anyValue{IntValue: intValue(n)} })
	case attribute.FLOAT64SLICE:
		av.ArrayValue = array(v.AsFloat64Slice(), func(f float64) *anyValue {
			d := double(f)
			return &anyValue{DoubleValue: &d}
		})
	case attribute.STRINGSLICE:
		av.ArrayValue = array(v.AsStringSlice(), func(s string) *anyValue { return &anyValue{StringValue: &s} })
	case attribute.SLICE:
		av.ArrayValue = array(v.AsSlice(), newValue)
	case attribute.MAP:
		av.KvlistValue = &keyValueList{Values: keyValues(v.AsMap())}
	case attribute.EMPTY:
	default:
		s := "INVALID"
		av.StringValue = &s
	}
	return av
}

// array is the ArrayValue of vs, each made a value by f.
func array[T any](vs []T, f func(T) *anyValue) *valuesJSON {
	a := &valuesJSON{}
	for _, v := range vs {
		a.Values = append(a.Values, f(v))
	}
	return a
}

func intValue(n int64) *string {
	s := strconv.FormatInt(n, 10)
	return &s
}
