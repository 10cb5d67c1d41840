package spanbridge

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/sessions"
)

// Attrs converts OpenTelemetry attributes (a Resource's, say) to record
// attributes, keeping every one: Attributes is its inverse.
func Attrs(kvs []attribute.KeyValue) sessions.Attrs {
	out := make(sessions.Attrs, len(kvs))
	for i, kv := range kvs {
		out[i] = sessions.Attr{Key: string(kv.Key), Value: Value(kv.Value)}
	}
	return out
}

// Attributes converts record attributes back to OpenTelemetry ones, in
// order: the inverse of Attrs, for a record (or a session's Resource) on
// its way back to a span. It returns nil for none.
func Attributes(a sessions.Attrs) []attribute.KeyValue {
	if len(a) == 0 {
		return nil
	}
	return appendAttributes(make([]attribute.KeyValue, 0, len(a)), a)
}

// appendAttributes appends a, converted, to dst: Attributes without a
// slice of its own, for a span that carries more.
func appendAttributes(dst []attribute.KeyValue, a sessions.Attrs) []attribute.KeyValue {
	for _, kv := range a {
		dst = append(dst, attribute.KeyValue{Key: attribute.Key(kv.Key), Value: AttributeValue(kv.Value)})
	}
	return dst
}

// Value converts an OpenTelemetry attribute value to a record value. The
// types a record has no room for (byte slices, nested slices and maps)
// are stored as the string OpenTelemetry emits for them.
func Value(v attribute.Value) sessions.Value {
	switch v.Type() {
	case attribute.BOOL:
		return sessions.BoolValue(v.AsBool())
	case attribute.INT64:
		return sessions.Int64Value(v.AsInt64())
	case attribute.FLOAT64:
		return sessions.Float64Value(v.AsFloat64())
	case attribute.STRING:
		return sessions.StringValue(v.AsString())
	case attribute.BOOLSLICE:
		return sessions.SliceValue(v.AsBoolSlice())
	case attribute.INT64SLICE:
		return sessions.SliceValue(v.AsInt64Slice())
	case attribute.FLOAT64SLICE:
		return sessions.SliceValue(v.AsFloat64Slice())
	case attribute.STRINGSLICE:
		return sessions.SliceValue(v.AsStringSlice())
	case attribute.EMPTY:
		return sessions.Value{}
	}
	return sessions.StringValue(v.Emit())
}

// AttributeValue converts a record value back to an OpenTelemetry one: the
// inverse of Value for every type a record holds, so a value comes back
// with the type it was recorded with. The empty value comes back empty
// (OTLP sends it as an empty AnyValue).
func AttributeValue(v sessions.Value) attribute.Value {
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
	return attribute.Value{}
}
