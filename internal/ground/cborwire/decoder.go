package cborwire

import (
	"bytes"
	"math"
	"strconv"
	"time"
)

// A Decoder reads the items of a stored record in place, as a Reader does,
// and charges each to the decoding budget as WalkBudget charges it, so
// that a hand-written decoder built on it accepts a value only within its
// budget. Its methods return false for an item not in the form writers
// give it (an indefinite length, a key out of order, a type the format
// does not give the field): the library decides those.
//
// A hand-written decoder reads a value twice. In the first pass Fill is
// false: the Decoder checks and charges, and makes nothing that allocates
// (no string, slice or boxed value). Only a value that passed is read
// again with Fill set, and then what it holds is made.
type Decoder struct {
	Reader
	// Fill is set in the second pass.
	Fill bool
	// Shared is the value as a string, whose pieces the strings read are;
	// when it is empty each string read is a copy of its own.
	Shared string
	// Cost is the budget's charges so far.
	Cost int64
}

// NewDecoder returns a Decoder of b for the first pass.
func NewDecoder(b []byte) Decoder { return Decoder{Reader: NewReader(b)} }

// Str returns the string whose bytes are p, a piece of the value: a piece
// of Shared, or a copy when Shared is empty, or "" in the first pass.
func (d *Decoder) Str(p []byte) string {
	switch {
	case !d.Fill || len(p) == 0:
		return ""
	case d.Shared == "":
		return string(p)
	}
	off := d.Offset() - len(p) // p was the last thing read
	return d.Shared[off : off+len(p)]
}

// MapHead reads the head of a map of definite length and charges it.
func (d *Decoder) MapHead() (int, bool) {
	h, ok := d.Head()
	if !ok || h.Major != MajorMap || h.Indefinite() || h.Arg > MaxMapPairs {
		return 0, false
	}
	d.Cost += costMap
	if h.Arg > 0 {
		d.Cost += costGroup + 2*int64(h.Arg)*costMapItem
	}
	return int(h.Arg), true
}

// ArrayHead reads the head of an array of definite length and charges it.
func (d *Decoder) ArrayHead() (int, bool) {
	h, ok := d.Head()
	if !ok || h.Major != MajorArray || h.Indefinite() || h.Arg > MaxArrayElements {
		return 0, false
	}
	d.Cost += costArray + int64(h.Arg)*costArrayItem
	return int(h.Arg), true
}

// BytesOf reads a string of major type m, charged as WalkBudget charges
// it: an empty text string costs nothing, an empty byte string its header.
func (d *Decoder) BytesOf(m Major) ([]byte, bool) {
	p, ok := d.String(m)
	if ok && (len(p) > 0 || m == MajorBytes) {
		d.Cost += costString + int64(len(p))
	}
	return p, ok
}

// Text reads a text string, charged as BytesOf charges it.
func (d *Decoder) Text() (string, bool) {
	p, ok := d.BytesOf(MajorText)
	return d.Str(p), ok
}

// Key reads a map's next key, which must follow prev in encoded order:
// keys out of order, or repeated, are the library's to judge.
func (d *Decoder) Key(prev []byte) ([]byte, bool) {
	k, ok := d.BytesOf(MajorText)
	if !ok || prev != nil && (len(k) < len(prev) || len(k) == len(prev) && bytes.Compare(k, prev) <= 0) {
		return nil, false
	}
	return k, true
}

// Field reads the next key of a struct's map, one of keys (its keys in
// encoded order), and returns its index, which must be above last.
func (d *Decoder) Field(keys []string, last int) (int, bool) {
	k, ok := d.BytesOf(MajorText)
	if !ok {
		return 0, false
	}
	for i := last + 1; i < len(keys); i++ {
		if string(k) == keys[i] {
			return i, true
		}
	}
	return 0, false // unknown, out of order or repeated
}

// Int64 reads an integer that fits an int64, and charges it.
func (d *Decoder) Int64() (int64, bool) {
	h, ok := d.Head()
	n, isInt := h.Int()
	d.Cost += costNumber
	return n, ok && isInt
}

// Int reads an integer that fits an int.
func (d *Decoder) Int() (int, bool) {
	n, ok := d.Int64()
	return int(n), ok && (strconv.IntSize == 64 || n >= math.MinInt32 && n <= math.MaxInt32)
}

// Uint64 reads an unsigned integer, and charges it.
func (d *Decoder) Uint64() (uint64, bool) {
	h, ok := d.Head()
	d.Cost += costNumber
	return h.Arg, ok && h.Major == MajorUint && !h.Indefinite()
}

// Duration reads nanoseconds, an integer.
func (d *Decoder) Duration() (time.Duration, bool) {
	n, ok := d.Int64()
	return time.Duration(n), ok
}

// ID reads a trace or span id into dst: a byte string of its length.
func (d *Decoder) ID(dst []byte) bool {
	p, ok := d.BytesOf(MajorBytes)
	copy(dst, p)
	return ok && len(p) == len(dst)
}

// Fields reads a struct's map: for each of its keys, in order, read reads
// the value of the key of that index. A key missing leaves its field
// zero, as the library does.
func (d *Decoder) Fields(keys []string, read func(i int) bool) bool {
	n, ok := d.MapHead()
	last := -1
	for ; ok && n > 0; n-- {
		if last, ok = d.Field(keys, last); ok {
			ok = read(last)
		}
	}
	return ok
}

// Pair reads a map of two text fields, each of which may be left out (a
// record's scope or status).
func (d *Decoder) Pair(keys []string, first, second *string) bool {
	return d.Fields(keys, func(i int) (ok bool) {
		if i == 0 {
			*first, ok = d.Text()
		} else {
			*second, ok = d.Text()
		}
		return ok
	})
}

// List reads an array of what one reads. An empty array is an empty
// slice, not nil, as the library reads it.
func List[T any](d *Decoder, one func() (T, bool)) ([]T, bool) {
	n, ok := d.ArrayHead()
	var out []T
	if d.Fill {
		out = make([]T, n)
	}
	for i := 0; ok && i < n; i++ {
		var x T
		if x, ok = one(); d.Fill {
			out[i] = x
		}
	}
	return out, ok
}

// kind is the Go type of a plain item of an attribute's value.
type kind uint8

const (
	kindEmpty kind = iota
	kindBool
	kindInt64
	kindFloat64
	kindString
)

// scalar is the kind of a plain CBOR item that an attribute's value, or
// an element of one, may be: kindBool, kindInt64, kindFloat64 or
// kindString, read from its head; kindEmpty for anything else.
func scalar(h Head) kind {
	switch h.Major {
	case MajorUint, MajorNeg:
		if _, ok := h.Int(); ok {
			return kindInt64
		}
	case MajorText:
		if !h.Indefinite() {
			return kindString
		}
	case MajorSimple:
		switch h.Info {
		case InfoFalse, InfoTrue:
			return kindBool
		case InfoFloat16, InfoFloat32, InfoFloat64:
			return kindFloat64
		}
	}
	return kindEmpty
}

// Value reads an attribute's value as the plain Go value the library
// decodes it to, checked as an attribute's value must be: nil for null,
// a bool, an int64, a float64 or a string, or a slice of one of them (an
// empty array is a []string, and an array's first element gives the type
// all must have). In the first pass it returns nil.
func (d *Decoder) Value() (any, bool) {
	h, ok := d.Head()
	if !ok {
		return nil, false
	}
	if h.Major == MajorSimple && h.Info == InfoNull {
		return nil, true
	}
	if h.Major != MajorArray {
		k := scalar(h)
		x, ok := d.element(h, k)
		if !ok || !d.Fill {
			return nil, ok
		}
		switch k {
		case kindBool:
			return x.b, true
		case kindInt64:
			return x.n, true
		case kindFloat64:
			return x.f, true
		}
		return x.s, true
	}
	if h.Indefinite() || h.Arg > MaxArrayElements {
		return nil, false
	}
	n := int(h.Arg)
	d.Cost += costArray + int64(n)*costArrayItem
	if n == 0 {
		if !d.Fill {
			return nil, true
		}
		return []string{}, true
	}
	at := d.Offset()
	first, _ := d.Head()
	d.Seek(at)
	switch scalar(first) {
	case kindBool:
		return elements(d, n, kindBool, func(x item) bool { return x.b })
	case kindInt64:
		return elements(d, n, kindInt64, func(x item) int64 { return x.n })
	case kindFloat64:
		return elements(d, n, kindFloat64, func(x item) float64 { return x.f })
	case kindString:
		return elements(d, n, kindString, func(x item) string { return x.s })
	}
	return nil, false
}

// item is a scalar read by element.
type item struct {
	b bool
	n int64
	f float64
	s string
}

// element reads the rest of a scalar of kind k whose head is h, and
// charges it.
func (d *Decoder) element(h Head, k kind) (item, bool) {
	var x item
	switch k {
	case kindBool:
		x.b = h.Info == InfoTrue
	case kindInt64:
		x.n, _ = h.Int()
		d.Cost += costNumber
	case kindFloat64:
		x.f, _ = h.Float()
		d.Cost += costNumber
	case kindString:
		p, ok := d.Take(h.Arg)
		if !ok {
			return x, false
		}
		if len(p) > 0 {
			d.Cost += costString + int64(len(p))
		}
		x.s = d.Str(p)
	default:
		return x, false
	}
	return x, true
}

// elements reads the n elements of an array, all of kind k, into a slice.
func elements[T bool | int64 | float64 | string](d *Decoder, n int, k kind, get func(item) T) (any, bool) {
	var out []T
	if d.Fill {
		out = make([]T, n)
	}
	for i := range n {
		h, ok := d.Head()
		if !ok || scalar(h) != k {
			return nil, false
		}
		x, ok := d.element(h, k)
		if !ok {
			return nil, false
		}
		if d.Fill {
			out[i] = get(x)
		}
	}
	if !d.Fill {
		return nil, true
	}
	return out, true
}
