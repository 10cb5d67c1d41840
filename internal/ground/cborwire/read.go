package cborwire

import (
	"encoding/binary"
	"math"
)

// Head is the head of a CBOR item: its major type, its additional
// information and the argument that follows from it.
type Head struct {
	Major Major
	// Info is the additional information, the low five bits of the first
	// byte: below 24 the argument itself, 24 to 27 the argument's width (1,
	// 2, 4 or 8 bytes), 31 an indefinite length (or, in major type 7, a
	// break).
	Info uint8
	// Arg is the argument: an integer's value (its magnitude less one,
	// for MajorNeg), a string's length in bytes, an array's count of
	// elements, a map's count of pairs, a tag's number, a float's bits.
	// 0 for an indefinite length.
	Arg uint64
}

// Indefinite reports whether the head opens an item of indefinite length
// (or is a break).
func (h Head) Indefinite() bool { return h.Info == 31 }

// Int returns the integer of a MajorUint or MajorNeg head, and false for
// another head or an integer beyond int64.
func (h Head) Int() (int64, bool) {
	if h.Arg > math.MaxInt64 || h.Info > 27 {
		return 0, false
	}
	switch h.Major {
	case MajorUint:
		return int64(h.Arg), true
	case MajorNeg:
		return ^int64(h.Arg), true // -1 - Arg
	}
	return 0, false
}

// Float returns the value of a float head of any width, widened to
// float64 exactly as the reference widens it (a half's NaN is made
// quiet, as its float16 package does), and false for another head.
func (h Head) Float() (float64, bool) {
	if h.Major != MajorSimple {
		return 0, false
	}
	switch h.Info {
	case InfoFloat16:
		return float64(math.Float32frombits(widenHalf(uint16(h.Arg)))), true
	case InfoFloat32:
		return float64(math.Float32frombits(uint32(h.Arg))), true
	case InfoFloat64:
		return math.Float64frombits(h.Arg), true
	}
	return 0, false
}

// widenHalf returns the single-precision bits of the half-precision bits
// h: the same value (subnormal halves are normal singles), with a NaN made
// quiet.
func widenHalf(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h&0x7c00) >> 10
	frac := uint32(h&0x03ff) << 13
	switch {
	case exp == 0x1f && frac == 0:
		return sign | 0x7f800000
	case exp == 0x1f:
		return sign | 0x7fc00000 | frac
	case exp == 0 && frac == 0:
		return sign
	case exp == 0:
		// Normalise: shift the fraction up to its leading 1, which
		// becomes the implicit bit.
		exp++
		for frac&0x7f800000 == 0 {
			frac <<= 1
			exp--
		}
		frac &= 0x7fffff
	}
	return sign | (exp+127-15)<<23 | frac
}

// A Reader reads CBOR items in place from a byte slice. It allocates
// nothing: strings come back as pieces of the slice. Its zero value reads
// nothing; NewReader makes one.
type Reader struct {
	b   []byte
	off int
}

// NewReader returns a Reader of b from its first byte.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Offset returns how many bytes the reader has read.
func (r *Reader) Offset() int { return r.off }

// Len returns how many bytes are left to read.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Seek moves the reader to offset off of its slice, which must be within
// it (an offset Offset returned earlier).
func (r *Reader) Seek(off int) { r.off = min(max(off, 0), len(r.b)) }

// Head reads the head of the next item. It returns false, having read
// nothing, when the slice ends before the head does, or the head's
// additional information is one RFC 8949 reserves (28 to 30).
func (r *Reader) Head() (Head, bool) {
	if r.off >= len(r.b) {
		return Head{}, false
	}
	ib := r.b[r.off]
	h := Head{Major: Major(ib >> 5), Info: ib & 0x1f}
	rest := r.b[r.off+1:]
	switch {
	case h.Info < 24:
		h.Arg = uint64(h.Info)
		r.off++
	case h.Info == 24 && len(rest) >= 1:
		h.Arg = uint64(rest[0])
		r.off += 2
	case h.Info == 25 && len(rest) >= 2:
		h.Arg = uint64(binary.BigEndian.Uint16(rest))
		r.off += 3
	case h.Info == 26 && len(rest) >= 4:
		h.Arg = uint64(binary.BigEndian.Uint32(rest))
		r.off += 5
	case h.Info == 27 && len(rest) >= 8:
		h.Arg = binary.BigEndian.Uint64(rest)
		r.off += 9
	case h.Info == 31:
		r.off++
	default:
		return Head{}, false
	}
	return h, true
}

// Take reads the next n bytes, the content of a string whose head said n,
// and returns them as a piece of the reader's slice. It returns false,
// having read nothing, when fewer than n bytes are left.
func (r *Reader) Take(n uint64) ([]byte, bool) {
	if n > uint64(len(r.b)-r.off) {
		return nil, false
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, true
}

// String reads a string of major type m (MajorText or MajorBytes) of
// definite length, and returns its content as a piece of the reader's
// slice. It returns false, having read nothing, for another item, an
// indefinite length, or a string cut short.
func (r *Reader) String(m Major) ([]byte, bool) {
	off := r.off
	h, ok := r.Head()
	if ok && h.Major == m && !h.Indefinite() {
		if b, ok := r.Take(h.Arg); ok {
			return b, true
		}
	}
	r.off = off
	return nil, false
}

// Skip reads past the next item, whatever it holds, and reports whether
// it could: false, with the reader where it was, for an item of
// indefinite length (writers never write one), a reserved head, or an
// item cut short. It allocates nothing: nested items are counted, not
// stacked, and every one takes a byte at least, so a head claiming more
// items than bytes are left is refused.
func (r *Reader) Skip() bool {
	start := r.off
	for left := uint64(1); left > 0; left-- {
		h, ok := r.Head()
		if !ok || h.Indefinite() {
			r.off = start
			return false
		}
		switch h.Major {
		case MajorBytes, MajorText:
			if _, ok := r.Take(h.Arg); !ok {
				r.off = start
				return false
			}
		case MajorArray, MajorMap, MajorTag:
			n := h.Arg
			if h.Major == MajorMap {
				if n > uint64(r.Len()) {
					r.off = start
					return false
				}
				n *= 2
			} else if h.Major == MajorTag {
				n = 1
			}
			if n > uint64(r.Len()) {
				r.off = start
				return false
			}
			left += n
		}
	}
	return true
}
