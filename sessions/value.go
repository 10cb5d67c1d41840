package sessions

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ValueKind is the type of a Value: the types an OpenTelemetry attribute can
// hold.
type ValueKind uint8

// The kinds of Value.
const (
	KindEmpty ValueKind = iota
	KindBool
	KindInt64
	KindFloat64
	KindString
	KindBoolSlice
	KindInt64Slice
	KindFloat64Slice
	KindStringSlice
)

var kindNames = [...]string{"empty", "bool", "int64", "float64", "string", "[]bool", "[]int64", "[]float64", "[]string"}

// String returns the kind's name, e.g. "int64" or "[]string".
func (k ValueKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "ValueKind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a typed attribute value, as a record stores it. In CBOR it is
// the plain CBOR item (a bool, an integer, a float, a text string or an
// array of one of those), so readers without our types can decode it.
type Value struct {
	v any // nil, bool, int64, float64, string, []bool, []int64, []float64, []string
}

// BoolValue returns a Value holding b.
func BoolValue(b bool) Value { return Value{b} }

// Int64Value returns a Value holding n.
func Int64Value(n int64) Value { return Value{n} }

// Float64Value returns a Value holding f.
func Float64Value(f float64) Value { return Value{f} }

// StringValue returns a Value holding s.
func StringValue(s string) Value { return Value{s} }

// SliceValue returns a Value holding a copy of v: an array of bools,
// int64s, float64s or strings. A nil v is an empty array.
func SliceValue[T bool | int64 | float64 | string](v []T) Value {
	return Value{slices.Clone(nonNil(v))}
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// Kind returns the type of the value.
func (v Value) Kind() ValueKind {
	switch v.v.(type) {
	case bool:
		return KindBool
	case int64:
		return KindInt64
	case float64:
		return KindFloat64
	case string:
		return KindString
	case []bool:
		return KindBoolSlice
	case []int64:
		return KindInt64Slice
	case []float64:
		return KindFloat64Slice
	case []string:
		return KindStringSlice
	}
	return KindEmpty
}

// Any returns the value as a bool, int64, float64, string, []bool, []int64,
// []float64 or []string, or nil for an empty Value. Slices are shared: do
// not modify them.
func (v Value) Any() any { return v.v }

// AsBool returns the value if it is a bool, else false.
func (v Value) AsBool() bool { b, _ := v.v.(bool); return b }

// AsInt64 returns the value if it is an int64, else 0.
func (v Value) AsInt64() int64 { n, _ := v.v.(int64); return n }

// AsFloat64 returns the value if it is a float64 (or an int64, converted),
// else 0.
func (v Value) AsFloat64() float64 {
	switch x := v.v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return 0
}

// AsString returns the value if it is a string, else "".
func (v Value) AsString() string { s, _ := v.v.(string); return s }

// String formats the value for people: strings as they are, everything else
// as Go prints it.
func (v Value) String() string {
	switch x := v.v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v.v)
}

// Equal reports whether v and w hold the same type and value.
func (v Value) Equal(w Value) bool {
	switch x := v.v.(type) {
	case []bool:
		y, ok := w.v.([]bool)
		return ok && slices.Equal(x, y)
	case []int64:
		y, ok := w.v.([]int64)
		return ok && slices.Equal(x, y)
	case []float64:
		y, ok := w.v.([]float64)
		return ok && slices.Equal(x, y)
	case []string:
		y, ok := w.v.([]string)
		return ok && slices.Equal(x, y)
	}
	return v.v == w.v
}

// MarshalCBOR encodes the value as the plain CBOR item it holds.
func (v Value) MarshalCBOR() ([]byte, error) { return encMode.Marshal(v.v) }

// UnmarshalCBOR decodes a plain CBOR item into a Value. It fails on items a
// record never holds (maps, byte strings, tags, mixed arrays, integers
// beyond int64), which makes the record undecodable rather than misread.
func (v *Value) UnmarshalCBOR(b []byte) error {
	var x any
	if err := decMode.Unmarshal(b, &x); err != nil {
		return err
	}
	val, err := valueOf(x)
	if err != nil {
		return err
	}
	*v = val
	return nil
}

func valueOf(x any) (Value, error) {
	switch x := x.(type) {
	case nil:
		return Value{}, nil
	case bool, int64, float64, string:
		return Value{x}, nil
	case uint64:
		if x > math.MaxInt64 {
			return Value{}, fmt.Errorf("integer %d overflows int64", x)
		}
		return Value{int64(x)}, nil
	case []any:
		if len(x) == 0 {
			return Value{[]string{}}, nil
		}
		first, err := valueOf(x[0])
		if err != nil {
			return Value{}, err
		}
		switch first.Kind() {
		case KindBool:
			return sliceOf[bool](x)
		case KindInt64:
			return sliceOf[int64](x)
		case KindFloat64:
			return sliceOf[float64](x)
		case KindString:
			return sliceOf[string](x)
		}
		return Value{}, fmt.Errorf("array of %s is not an attribute value", first.Kind())
	}
	return Value{}, fmt.Errorf("CBOR item of Go type %T is not an attribute value", x)
}

func sliceOf[T bool | int64 | float64 | string](xs []any) (Value, error) {
	out := make([]T, len(xs))
	for i, x := range xs {
		e, err := valueOf(x)
		if err != nil {
			return Value{}, err
		}
		t, ok := e.v.(T)
		if !ok {
			return Value{}, fmt.Errorf("mixed array: element %d is %s", i, e.Kind())
		}
		out[i] = t
	}
	return Value{out}, nil
}

// MarshalJSON encodes the value as its typed JSON value. Floats that JSON
// cannot hold (NaN, ±Inf) become the strings "NaN", "+Inf" and "-Inf".
func (v Value) MarshalJSON() ([]byte, error) {
	switch x := v.v.(type) {
	case float64:
		return json.Marshal(jsonFloat(x))
	case []float64:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = jsonFloat(f)
		}
		return json.Marshal(out)
	}
	return json.Marshal(v.v)
}

func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	// Keep a float a float in JSON: 2.0, not 2, so a reader can tell it
	// from an integer.
	b := strconv.AppendFloat(nil, f, 'g', -1, 64)
	if !strings.ContainsAny(string(b), ".eE") {
		b = append(b, ".0"...)
	}
	return json.RawMessage(b)
}

// Attr is a key and its value.
type Attr struct {
	Key   string
	Value Value
}

// Attrs is a list of attributes, stored as one CBOR map from key to value.
// Keys are unique; order is the order they were set (and, once read back,
// key order).
type Attrs []Attr

// Get returns the value of key and whether it is present.
func (a Attrs) Get(key string) (Value, bool) {
	for _, kv := range a {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return Value{}, false
}

// MarshalCBOR encodes the attributes as one CBOR map with text keys.
func (a Attrs) MarshalCBOR() ([]byte, error) {
	m := make(map[string]Value, len(a))
	for _, kv := range a {
		m[kv.Key] = kv.Value
	}
	return encMode.Marshal(m)
}

// UnmarshalCBOR decodes a CBOR map with text keys, sorted by key.
func (a *Attrs) UnmarshalCBOR(b []byte) error {
	var m map[string]any
	if err := decMode.Unmarshal(b, &m); err != nil {
		return err
	}
	out, err := attrsOf(m)
	if err != nil {
		return err
	}
	if out == nil {
		out = Attrs{} // the map was there, if empty
	}
	*a = out
	return nil
}

// attrsOf converts a decoded CBOR map to attributes sorted by key. Its
// values are plain CBOR items decoded into an interface, which valueOf
// checks: one item a record never holds makes the whole set fail, as it
// makes Value.UnmarshalCBOR fail. A nil map gives nil attributes.
func attrsOf(m map[string]any) (Attrs, error) {
	if m == nil {
		return nil, nil
	}
	out := make(Attrs, 0, len(m))
	for k, x := range m {
		v, err := valueOf(x)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out = append(out, Attr{k, v})
	}
	sortAttrs(out)
	return out, nil
}

// sortAttrs sorts attributes read back by key: their order in the map
// that held them means nothing.
func sortAttrs(a Attrs) {
	slices.SortFunc(a, func(x, y Attr) int { return strings.Compare(x.Key, y.Key) })
}

// MarshalJSON encodes the attributes as one JSON object of typed values.
func (a Attrs) MarshalJSON() ([]byte, error) {
	m := make(map[string]Value, len(a))
	for _, kv := range a {
		m[kv.Key] = kv.Value
	}
	return json.Marshal(m)
}
