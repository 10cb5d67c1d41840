package tracefile

import (
	"math/bits"
	"strconv"
)

// This file counts the bytes OTLP's messages take in protobuf, as
// proto.Size counts them: a ResourceSpans of an OTLP JSON file is bounded
// by the size of the OTLP request it would be (MaxBytesPerResource), what
// the OTLP exporter sends in one request and a receiver takes, whatever
// the JSON spells out besides. Field numbers are opentelemetry-proto's.

// varintSize is how many bytes v takes as a varint.
func varintSize(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// tagSize is how many bytes the tag of field n takes.
func tagSize(n int) int { return varintSize(uint64(n) << 3) }

// lenField is the size of a length-delimited field n of n bytes,
// present.
func lenField(field, n int) int { return tagSize(field) + varintSize(uint64(n)) + n }

// strField is the size of a string or bytes field, left out when empty.
func strField(field, n int) int {
	if n == 0 {
		return 0
	}
	return lenField(field, n)
}

// varintField is the size of a varint field, left out when zero.
func varintField(field int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tagSize(field) + varintSize(v)
}

// fixedField is the size of a fixed64 (or fixed32, 4 bytes) field given
// as its decimal text, left out when zero.
func fixed64Field(field int, decimal string) int {
	if decimal == "" || decimal == "0" {
		return 0
	}
	return tagSize(field) + 8
}

func (s *spanJSON) protoSize() int {
	n := strField(1, len(s.TraceID)/2) + strField(2, len(s.SpanID)/2) + strField(3, len(s.TraceState)) +
		strField(4, len(s.ParentSpanID)/2) + strField(5, len(s.Name)) + varintField(6, uint64(s.Kind)) +
		fixed64Field(7, s.StartTimeUnixNano) + fixed64Field(8, s.EndTimeUnixNano) +
		varintField(10, uint64(s.DroppedAttributesCount)) + varintField(12, uint64(s.DroppedEventsCount)) +
		varintField(14, uint64(s.DroppedLinksCount))
	n += keyValuesSize(9, s.Attributes)
	for i := range s.Events {
		n += lenField(11, s.Events[i].protoSize())
	}
	for i := range s.Links {
		n += lenField(13, s.Links[i].protoSize())
	}
	if s.Status != nil {
		n += lenField(15, strField(2, len(s.Status.Message))+varintField(3, uint64(s.Status.Code)))
	}
	if s.Flags != 0 {
		n += tagSize(16) + 4
	}
	return n
}

func (e *eventJSON) protoSize() int {
	return fixed64Field(1, e.TimeUnixNano) + strField(2, len(e.Name)) + keyValuesSize(3, e.Attributes) +
		varintField(4, uint64(e.DroppedAttributesCount))
}

func (l *linkJSON) protoSize() int {
	n := strField(1, len(l.TraceID)/2) + strField(2, len(l.SpanID)/2) + keyValuesSize(4, l.Attributes) +
		varintField(5, uint64(l.DroppedAttributesCount))
	if l.Flags != 0 {
		n += tagSize(6) + 4
	}
	return n
}

// scopeSize is the size of an InstrumentationScope; nil is none.
func (s *scopeJSON) protoSize() int {
	return strField(1, len(s.Name)) + strField(2, len(s.Version)) + keyValuesSize(3, s.Attributes)
}

// keyValuesSize is the size of a repeated KeyValue field.
func keyValuesSize(field int, kvs []keyValueJSON) int {
	n := 0
	for i := range kvs {
		n += lenField(field, kvs[i].protoSize())
	}
	return n
}

func (kv *keyValueJSON) protoSize() int {
	n := strField(1, len(kv.Key))
	if kv.Value != nil {
		n += lenField(2, kv.Value.protoSize())
	}
	return n
}

// protoSize is the size of an AnyValue: its one member, present whatever
// its value.
func (v *anyValue) protoSize() int {
	switch {
	case v.StringValue != nil:
		return lenField(1, len(*v.StringValue))
	case v.BoolValue != nil:
		return tagSize(2) + 1
	case v.IntValue != nil:
		i, _ := strconv.ParseInt(*v.IntValue, 10, 64)
		return tagSize(3) + varintSize(uint64(i))
	case v.DoubleValue != nil:
		return tagSize(4) + 8
	case v.ArrayValue != nil:
		n := 0
		for _, e := range v.ArrayValue.Values {
			n += lenField(1, e.protoSize())
		}
		return lenField(5, n)
	case v.KvlistValue != nil:
		return lenField(6, keyValuesSize(1, v.KvlistValue.Values))
	case v.BytesValue != nil:
		return lenField(7, len(*v.BytesValue)/4*3-padding(*v.BytesValue))
	}
	return 0
}

// padding is how many bytes short of a whole group of three the base64
// text s ends.
func padding(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '='; i-- {
		n++
	}
	return n
}
