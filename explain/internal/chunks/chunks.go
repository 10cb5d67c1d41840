// Package chunks holds the memory a session tree is made of, a few bytes
// a record however large the session: values in fixed-size chunks
// (Chunked), the positions of records found by span in a hash index over
// them (SpanIndex), and strings numbered once (Interned). Package explain
// builds its trees, nestings and tallies on them.
package chunks

import (
	"hash/maphash"
	"slices"
	"strings"

	"github.com/otelrecords/otelrecords/sessions"
)

// ChunkSize is how many values a chunk holds, past the first (which
// grows by doubling, so a small session costs little).
const ChunkSize = 1 << 10

// Chunked holds values in fixed-size arrays rather than one growing
// slice: growing a slice of a million values copies them again and again
// (Go grows large slices by a quarter), allocating five times what it
// keeps; chunks allocate what they keep, and once the first is full never
// move a value. A chunk of values without pointers is one object the
// garbage collector never scans.
type Chunked[T any] struct {
	c [][]T
	n int
}

// At returns the value at position i, which must be below Len.
func (c *Chunked[T]) At(i int32) *T { return &c.c[i/ChunkSize][i%ChunkSize] }

// Len returns how many values there are.
func (c *Chunked[T]) Len() int { return c.n }

// Chunks returns the chunks, in order: the values of chunk i start at
// position i*ChunkSize, and never move.
func (c *Chunked[T]) Chunks() [][]T { return c.c }

// Add returns a new value at the end, zero.
func (c *Chunked[T]) Add() *T {
	if len(c.c) == 0 || len(c.c[len(c.c)-1]) == ChunkSize {
		c.c = append(c.c, nil)
	}
	last := &c.c[len(c.c)-1]
	if len(*last) == cap(*last) && len(c.c) == 1 {
		*last = slices.Grow(*last, min(max(2*len(*last), 8), ChunkSize)-len(*last))
	} else if cap(*last) == 0 {
		*last = make([]T, 0, ChunkSize)
	}
	*last = (*last)[:len(*last)+1]
	c.n++
	return &(*last)[len(*last)-1]
}

// SpanIndex finds a session's records by span, for the records that name
// it as their parent: a hash table of positions (in the order the records
// came), open-addressed, keyed by a 64-bit hash of the span's trace and
// span ids. It holds 8 bytes per record for the hashes and 4 to 11 per
// record for the table (a map of the ids would hold 60 or more).
//
// Two spans are taken for one when their hashes are equal. The hash is
// keyed with a seed drawn for each index, so no store can be made to
// collide on purpose; by chance, two spans of a session of n collide
// with a probability of about n²/2⁶⁵: one in 37 million for a million
// spans.
type SpanIndex struct {
	seed   maphash.Seed
	hashes Chunked[uint64] // by position; 0 for a record without a span
	slots  []int32         // position + 1; 0 is empty. Its length is a power of two
	n      int             // positions in slots
}

// hash returns the hash of a span (span ids are unique within their
// trace), never 0.
func (x *SpanIndex) hash(trace sessions.TraceID, span sessions.SpanID) uint64 {
	if x.slots == nil {
		x.seed = maphash.MakeSeed()
		x.slots = make([]int32, 16)
	}
	var key [len(trace) + len(span)]byte
	copy(key[:], trace[:])
	copy(key[len(trace):], span[:])
	return maphash.Bytes(x.seed, key[:]) | 1
}

// Find returns the position of the record of a span, or -1.
func (x *SpanIndex) Find(trace sessions.TraceID, span sessions.SpanID) int32 {
	if x.n == 0 {
		return -1
	}
	return x.findHash(x.hash(trace, span))
}

func (x *SpanIndex) findHash(h uint64) int32 {
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1
		}
		if *x.hashes.At(s - 1) == h {
			return s - 1
		}
	}
}

// Next adds the next position, the record of span (none when span is
// zero). A span already indexed keeps its first record.
func (x *SpanIndex) Next(trace sessions.TraceID, span sessions.SpanID) {
	h := x.hashes.Add()
	if span.IsZero() {
		return
	}
	pos := int32(x.hashes.n - 1)
	hash := x.hash(trace, span)
	if x.n > 0 && x.findHash(hash) >= 0 {
		return
	}
	*h = hash
	if (x.n+1)*10 > len(x.slots)*7 {
		x.grow()
	}
	x.insert(hash, pos)
	x.n++
}

func (x *SpanIndex) insert(h uint64, pos int32) {
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = pos + 1
}

// grow doubles the table.
func (x *SpanIndex) grow() {
	old := x.slots
	x.slots = make([]int32, 2*len(old))
	for _, s := range old {
		if s != 0 {
			x.insert(*x.hashes.At(s - 1), s-1)
		}
	}
}

// None is the number Interned gives a string it does not hold.
const None = -1

// Interned numbers strings, each once, in the order first seen.
type Interned struct {
	ids  map[string]int32
	list []string
}

// List returns the strings numbered, by number.
func (in *Interned) List() []string { return in.list }

// ID returns the number of s, numbering it if it is new; None when it is
// new and the list already holds most.
func (in *Interned) ID(s string, most int) int32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	if len(in.list) >= most {
		return None
	}
	if in.ids == nil {
		in.ids = make(map[string]int32)
	}
	s = strings.Clone(s) // a decoded record's strings share its whole value
	id := int32(len(in.list))
	in.ids[s] = id
	in.list = append(in.list, s)
	return id
}
