// Package heldsize is what the parts of a span an Importer holds cost in
// memory, as they count against the bytes it holds (importer.Config.HeldBytes):
// strings and attributes, each rounded up as the allocator rounds.
package heldsize

import "go.opentelemetry.io/otel/attribute"

// KV is what an attribute's slot costs (attribute.KeyValue), rounded up
// to the allocator's size class.
const KV = 64

// Str is what a string's bytes cost: rounded up to 16.
func Str(s string) int { return (len(s) + 15) &^ 15 }

// Attrs is what attributes cost: a slot each, and their keys' and values'
// bytes.
func Attrs(kvs []attribute.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += KV + Str(string(kv.Key)) + value(kv.Value)
	}
	return n
}

func value(v attribute.Value) int {
	switch v.Type() {
	case attribute.STRING:
		return Str(v.AsString())
	case attribute.STRINGSLICE:
		n := 0
		for _, s := range v.AsStringSlice() {
			n += 16 + Str(s)
		}
		return n
	case attribute.BOOLSLICE:
		return len(v.AsBoolSlice())
	case attribute.INT64SLICE:
		return 8 * len(v.AsInt64Slice())
	case attribute.FLOAT64SLICE:
		return 8 * len(v.AsFloat64Slice())
	}
	return 0
}
