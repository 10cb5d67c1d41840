package cborwire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Major is a CBOR major type, the top three bits of an item's first byte.
type Major uint8

// The major types (RFC 8949 §3.1).
const (
	MajorUint   Major = 0 // an unsigned integer
	MajorNeg    Major = 1 // a negative integer, -1 - its argument
	MajorBytes  Major = 2 // a byte string
	MajorText   Major = 3 // a text string
	MajorArray  Major = 4 // an array
	MajorMap    Major = 5 // a map
	MajorTag    Major = 6 // a tagged item
	MajorSimple Major = 7 // a simple value or a float
)

// The additional information of major type 7 this package reads and
// writes: the simple values and the three widths of float.
const (
	InfoFalse   = 20
	InfoTrue    = 21
	InfoNull    = 22
	InfoFloat16 = 25
	InfoFloat32 = 26
	InfoFloat64 = 27
)

// AppendHead appends the head of an item of major type m whose argument
// is n (its value, or its length, or its count of elements or pairs), in
// the shortest form that holds n.
func AppendHead(dst []byte, m Major, n uint64) []byte {
	mb := byte(m) << 5
	switch {
	case n < 24:
		return append(dst, mb|byte(n))
	case n <= math.MaxUint8:
		return append(dst, mb|24, byte(n))
	case n <= math.MaxUint16:
		return append(dst, mb|25, byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, mb|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, mb|27), n)
}

// AppendUint appends n as an unsigned integer.
func AppendUint(dst []byte, n uint64) []byte { return AppendHead(dst, MajorUint, n) }

// AppendInt appends n as an integer: unsigned (major type 0) when it is
// not negative, negative (major type 1) when it is.
func AppendInt(dst []byte, n int64) []byte {
	if n >= 0 {
		return AppendHead(dst, MajorUint, uint64(n))
	}
	return AppendHead(dst, MajorNeg, uint64(^n)) // -1 - n
}

// AppendText appends s as a text string. Its bytes are written as they
// are: the reference does not check that they are UTF-8 either.
func AppendText(dst []byte, s string) []byte {
	return append(AppendHead(dst, MajorText, uint64(len(s))), s...)
}

// AppendBytes appends b as a byte string.
func AppendBytes(dst []byte, b []byte) []byte {
	return append(AppendHead(dst, MajorBytes, uint64(len(b))), b...)
}

// AppendArrayHead appends the head of an array of n elements, which the
// caller appends after it.
func AppendArrayHead(dst []byte, n int) []byte { return AppendHead(dst, MajorArray, uint64(n)) }

// AppendMapHead appends the head of a map of n pairs, which the caller
// appends after it, each key then its value, keys in SortKeys order.
func AppendMapHead(dst []byte, n int) []byte { return AppendHead(dst, MajorMap, uint64(n)) }

// AppendBool appends true or false.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, byte(MajorSimple)<<5|InfoTrue)
	}
	return append(dst, byte(MajorSimple)<<5|InfoFalse)
}

// AppendNull appends null, which the reference writes for a nil pointer,
// interface, slice or map.
func AppendNull(dst []byte) []byte { return append(dst, byte(MajorSimple)<<5|InfoNull) }

// AppendFloat appends f as a float in the shortest of half, single and
// double precision that holds its value exactly (so -0 stays -0, and a
// float stays a float when it is integral: 2.0 is f9 4000). NaN, whatever
// its sign and payload, is f9 7e00, and the infinities are half precision,
// as the reference's ShortestFloat16, NaNConvert7e00 and InfConvertFloat16
// write them.
func AppendFloat(dst []byte, f float64) []byte {
	const float16 = byte(MajorSimple)<<5 | InfoFloat16
	switch {
	case f != f:
		return append(dst, float16, 0x7e, 0x00)
	case math.IsInf(f, 1):
		return append(dst, float16, 0x7c, 0x00)
	case math.IsInf(f, -1):
		return append(dst, float16, 0xfc, 0x00)
	}
	f32 := float32(f)
	if float64(f32) != f {
		return binary.BigEndian.AppendUint64(append(dst, byte(MajorSimple)<<5|InfoFloat64), math.Float64bits(f))
	}
	if h, ok := halfOf(f32); ok {
		return append(dst, float16, byte(h>>8), byte(h))
	}
	return binary.BigEndian.AppendUint32(append(dst, byte(MajorSimple)<<5|InfoFloat32), math.Float32bits(f32))
}

// halfOf returns the half-precision bits of a finite f, and whether they
// hold it exactly.
func halfOf(f float32) (uint16, bool) {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	if u&0x7fffffff == 0 {
		return sign, true // ±0
	}
	exp := int(u>>23&0xff) - 127
	frac := u & 0x7fffff
	switch {
	case exp >= -14 && exp <= 15:
		// A normal half keeps the top 10 of the 23 bits of fraction.
		if frac&0x1fff != 0 {
			return 0, false
		}
		return sign | uint16(exp+15)<<10 | uint16(frac>>13), true
	case exp >= -24 && exp < -14:
		// A subnormal half is k * 2^-24 for k below 1024; f is
		// m * 2^(exp-23), m its 24-bit significand, so k is m shifted right
		// by -1-exp (14 to 23) bits, none of which may be set.
		m := frac | 1<<23
		s := uint(-1 - exp)
		if m&(1<<s-1) != 0 {
			return 0, false
		}
		return sign | uint16(m>>s), true
	}
	return 0, false
}

// AppendPair appends a map of two text keys, each left out when its value
// is empty (a record's scope or status): k1 must sort before k2.
func AppendPair(dst []byte, k1, v1, k2, v2 string) []byte {
	n := 0
	for _, v := range [2]string{v1, v2} {
		if v != "" {
			n++
		}
	}
	dst = AppendMapHead(dst, n)
	if v1 != "" {
		dst = AppendText(AppendText(dst, k1), v1)
	}
	if v2 != "" {
		dst = AppendText(AppendText(dst, k2), v2)
	}
	return dst
}

// AppendValue appends an attribute's value, a plain Go value (nil, a bool,
// an int64, a float64, a string or a slice of one of them), as the CBOR
// item the library writes for it. A nil slice is null, as the library
// writes it. Any other Go type is an error.
func AppendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return AppendNull(dst), nil
	case bool:
		return AppendBool(dst, x), nil
	case int64:
		return AppendInt(dst, x), nil
	case float64:
		return AppendFloat(dst, x), nil
	case string:
		return AppendText(dst, x), nil
	case []bool:
		return AppendArray(dst, x, AppendBool), nil
	case []int64:
		return AppendArray(dst, x, AppendInt), nil
	case []float64:
		return AppendArray(dst, x, AppendFloat), nil
	case []string:
		return AppendTexts(dst, x), nil
	}
	return dst, fmt.Errorf("value of Go type %T is not an attribute value", v)
}

// AppendTexts appends xs as an array of text strings, null when it is nil.
func AppendTexts(dst []byte, xs []string) []byte { return AppendArray(dst, xs, AppendText) }

// AppendArray appends xs as an array, null when it is nil.
func AppendArray[T any](dst []byte, xs []T, appendOne func([]byte, T) []byte) []byte {
	if xs == nil {
		return AppendNull(dst)
	}
	dst = AppendArrayHead(dst, len(xs))
	for _, x := range xs {
		dst = appendOne(dst, x)
	}
	return dst
}
