package pull

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// This file reads OTLP JSON (the OTLP/JSON encoding of TracesData: ids in
// hex, 64-bit integers as strings or numbers, enums as numbers), which
// Jaeger's api_v3 answers with, into spans spanbridge maps back to
// records. It reads what spanbridge.Span and the official exporters
// write, and OTLP JSON from any writer as the encoding allows it.

// span is one OTLP span. With its scope set (readTraces sets it), it is a
// spanbridge.Source.
type span struct {
	TraceID      hexID      `json:"traceId"`
	SpanID       hexID      `json:"spanId"`
	ParentSpanID hexID      `json:"parentSpanId"`
	TraceState   string     `json:"traceState"`
	SpanName     string     `json:"name"`
	Kind         int        `json:"kind"`
	Start        unixNano   `json:"startTimeUnixNano"`
	End          unixNano   `json:"endTimeUnixNano"`
	Attrs        []keyValue `json:"attributes"`
	DroppedAttrs int        `json:"droppedAttributesCount"`
	EventList    []struct {
		Time       unixNano   `json:"timeUnixNano"`
		Name       string     `json:"name"`
		Attributes []keyValue `json:"attributes"`
	} `json:"events"`
	DroppedEventCount int `json:"droppedEventsCount"`
	LinkList          []struct {
		TraceID    hexID      `json:"traceId"`
		SpanID     hexID      `json:"spanId"`
		TraceState string     `json:"traceState"`
		Attributes []keyValue `json:"attributes"`
	} `json:"links"`
	DroppedLinkCount int `json:"droppedLinksCount"`
	SpanStatus       struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	} `json:"status"`

	scope instrumentation.Scope
	attrs []attribute.KeyValue // Attrs, converted
}

func (s *span) Name() string { return s.SpanName }

func (s *span) SpanContext() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID(s.TraceID.trace()),
		SpanID:     trace.SpanID(s.SpanID.span()),
		TraceState: parseTraceState(s.TraceState),
		TraceFlags: trace.FlagsSampled,
	})
}

func (s *span) Parent() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID(s.TraceID.trace()),
		SpanID:  trace.SpanID(s.ParentSpanID.span()),
	})
}

// SpanKind is OTLP's kind, whose numbers are the API's.
func (s *span) SpanKind() trace.SpanKind { return trace.SpanKind(s.Kind) }
func (s *span) StartTime() time.Time     { return s.Start.time() }
func (s *span) EndTime() time.Time       { return s.End.time() }

// Attributes converts the span's attributes once, for FromSpan and Map
// both read them.
func (s *span) Attributes() []attribute.KeyValue {
	if s.attrs == nil && len(s.Attrs) > 0 {
		s.attrs = attributes(s.Attrs)
	}
	return s.attrs
}

func (s *span) Links() []sdktrace.Link {
	if len(s.LinkList) == 0 {
		return nil
	}
	out := make([]sdktrace.Link, len(s.LinkList))
	for i, l := range s.LinkList {
		out[i] = sdktrace.Link{
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
				TraceID:    trace.TraceID(l.TraceID.trace()),
				SpanID:     trace.SpanID(l.SpanID.span()),
				TraceState: parseTraceState(l.TraceState),
			}),
			Attributes: attributes(l.Attributes),
		}
	}
	return out
}

func (s *span) Events() []sdktrace.Event {
	if len(s.EventList) == 0 {
		return nil
	}
	out := make([]sdktrace.Event, len(s.EventList))
	for i, e := range s.EventList {
		out[i] = sdktrace.Event{Name: e.Name, Time: e.Time.time(), Attributes: attributes(e.Attributes)}
	}
	return out
}

// Status maps OTLP's status codes (1 ok, 2 error), which are not the
// API's numbers.
func (s *span) Status() sdktrace.Status {
	switch s.SpanStatus.Code {
	case 1:
		return sdktrace.Status{Code: codes.Ok}
	case 2:
		return sdktrace.Status{Code: codes.Error, Description: s.SpanStatus.Message}
	}
	return sdktrace.Status{Code: codes.Unset}
}

func (s *span) InstrumentationScope() instrumentation.Scope { return s.scope }
func (s *span) DroppedAttributes() int                      { return s.DroppedAttrs }
func (s *span) DroppedLinks() int                           { return s.DroppedLinkCount }
func (s *span) DroppedEvents() int                          { return s.DroppedEventCount }

// parseTraceState parses a W3C trace state; one that does not parse comes
// back empty, as spanbridge reads a stored one.
func parseTraceState(s string) trace.TraceState {
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		return trace.TraceState{}
	}
	return ts
}

// hexID is a trace or span id in OTLP JSON: hex, "" (or absent) for none.
type hexID []byte

func (id *hexID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("OTLP JSON: id %q is not hex", s)
	}
	*id = v
	return nil
}

// trace and span return the id at the width of a trace or span id; an id
// of another length is none.
func (id hexID) trace() (t [16]byte) {
	if len(id) == len(t) {
		copy(t[:], id)
	}
	return t
}

func (id hexID) span() (s [8]byte) {
	if len(id) == len(s) {
		copy(s[:], id)
	}
	return s
}

// unixNano is a time in Unix nanoseconds, as OTLP JSON writes a fixed64:
// a string of digits, or a number.
type unixNano uint64

func (n *unixNano) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(string(unquote(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("OTLP JSON: time %s is not a whole number of nanoseconds", b)
	}
	*n = unixNano(v)
	return nil
}

func (n unixNano) time() time.Time { return time.Unix(0, int64(n)) }

// unquote returns b without the quotes of a JSON string, for the numbers
// OTLP JSON may write either way.
func unquote(b []byte) []byte {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		return b[1 : len(b)-1]
	}
	return b
}

// keyValue is one attribute.
type keyValue struct {
	Key   string   `json:"key"`
	Value anyValue `json:"value"`
}

// anyValue is OTLP's AnyValue: one of its fields is set, or none (an
// empty value).
type anyValue struct {
	StringValue *string         `json:"stringValue"`
	BoolValue   *bool           `json:"boolValue"`
	IntValue    json.RawMessage `json:"intValue"`
	DoubleValue json.RawMessage `json:"doubleValue"`
	ArrayValue  *struct {
		Values []anyValue `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []keyValue `json:"values"`
	} `json:"kvlistValue"`
	BytesValue *string `json:"bytesValue"`
}

func attributes(kvs []keyValue) []attribute.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]attribute.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = attribute.KeyValue{Key: attribute.Key(kv.Key), Value: kv.Value.value()}
	}
	return out
}

// value converts an OTLP value to the API's, as the records Collector
// component converts one: arrays whose elements share a type are arrays
// of it (an empty array is an array of strings: OTLP does not say the type
// of an empty one), and what the API has no type for (a map, bytes, an
// array of mixed types) is its JSON text, bytes in base64.
func (v anyValue) value() attribute.Value {
	switch {
	case v.StringValue != nil:
		return attribute.StringValue(*v.StringValue)
	case v.BoolValue != nil:
		return attribute.BoolValue(*v.BoolValue)
	case v.IntValue != nil:
		if n, err := strconv.ParseInt(string(unquote(v.IntValue)), 10, 64); err == nil {
			return attribute.Int64Value(n)
		}
		return attribute.StringValue(string(v.IntValue))
	case v.DoubleValue != nil:
		if f, ok := double(v.DoubleValue); ok {
			return attribute.Float64Value(f)
		}
		return attribute.StringValue(string(v.DoubleValue))
	case v.ArrayValue != nil:
		if a, ok := array(v.ArrayValue.Values); ok {
			return a
		}
	case v.BytesValue != nil:
		return attribute.StringValue(*v.BytesValue) // base64, as OTLP JSON writes it
	case v.KvlistValue == nil:
		return attribute.Value{} // empty
	}
	b, _ := json.Marshal(v.plain())
	return attribute.StringValue(string(b))
}

// double reads an OTLP JSON double: a number, or "NaN", "Infinity",
// "-Infinity" (or any number as a string).
func double(b json.RawMessage) (float64, bool) {
	switch s := string(unquote(b)); s {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	default:
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
}

// array converts an array whose elements all hold one scalar type.
func array(vs []anyValue) (attribute.Value, bool) {
	if len(vs) == 0 {
		return attribute.StringSliceValue([]string{}), true
	}
	first := vs[0].value().Type()
	for _, e := range vs {
		if e.ArrayValue != nil || e.KvlistValue != nil || e.BytesValue != nil || e.value().Type() != first {
			return attribute.Value{}, false
		}
	}
	switch first {
	case attribute.STRING:
		return attribute.StringSliceValue(each(vs, attribute.Value.AsString)), true
	case attribute.BOOL:
		return attribute.BoolSliceValue(each(vs, attribute.Value.AsBool)), true
	case attribute.INT64:
		return attribute.Int64SliceValue(each(vs, attribute.Value.AsInt64)), true
	case attribute.FLOAT64:
		return attribute.Float64SliceValue(each(vs, attribute.Value.AsFloat64)), true
	}
	return attribute.Value{}, false
}

func each[T any](vs []anyValue, get func(attribute.Value) T) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = get(v.value())
	}
	return out
}

// plain returns the value as plain JSON data, for the text of a value the
// API has no type for.
func (v anyValue) plain() any {
	switch {
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i, e := range v.ArrayValue.Values {
			out[i] = e.plain()
		}
		return out
	case v.KvlistValue != nil:
		out := make(map[string]any, len(v.KvlistValue.Values))
		for _, kv := range v.KvlistValue.Values {
			out[kv.Key] = kv.Value.plain()
		}
		return out
	case v.BytesValue != nil:
		return *v.BytesValue
	}
	a := v.value()
	if a.Type() == attribute.FLOAT64 && (math.IsNaN(a.AsFloat64()) || math.IsInf(a.AsFloat64(), 0)) {
		return a.Emit() // JSON has no number for it
	}
	return a.AsInterface()
}
