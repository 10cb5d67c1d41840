// Package hold is the one buffer that holds what a session did before it
// was kept: in order, within a byte budget, the oldest dropped first. The
// Recorder holds encoded records in it until the session's first change;
// the forwarder holds the session's spans in it until the same moment.
// Written once, so "hold until the session is kept" means the same thing
// for both: what led up to the change is kept, and a session that never
// changes anything holds its budget and nothing more, however long it runs.
package hold

import "encoding/binary"

// Buffer holds entries oldest first, each a value of type T, a payload of
// bytes and the size it counts against the budget (what the entry will
// cost once kept, as its owner reckons it). Payloads live in one ring of
// bytes, behind an 8-byte header (payload length, counted size); values
// of T live in a ring of their own, which takes no memory when T is
// struct{}. A Buffer is not safe for concurrent use.
//
// The bound: payload bytes plus headers never exceed the budget as long as
// every entry counts at least 8 bytes more than its payload, which the
// Recorder's entries do (a record counts its key, 28 bytes plus its kind,
// against a payload of its seq, kind and tally hint, 15 bytes plus the
// kind, besides the value both count). The ring grows by doubling, never
// past the budget.
type Buffer[T any] struct {
	budget  int
	ring    []byte
	head    int // where the oldest entry's header starts
	used    int // bytes of ring in use, from head, wrapping
	values  []T // ring of values, parallel to the entries
	vhead   int
	n       int // entries held
	counted int // what the budget counts of them
	scratch []byte
	onDrop  func(v T, payload []byte)
}

const header = 8

// New returns an empty Buffer with the given budget in bytes; a budget of
// 0 or less holds nothing.
func New[T any](budget int) *Buffer[T] { return &Buffer[T]{budget: max(budget, 0)} }

// OnDrop sets f to be called with every entry the buffer drops to make
// room (Hold) or to trim (Trim), as it drops it, oldest first: the
// Recorder counts what it lets go. The payload is valid only during the
// call. Reset calls nothing: what it lets go, the owner lets go.
func (b *Buffer[T]) OnDrop(f func(v T, payload []byte)) { b.onDrop = f }

// Len returns how many entries are held.
func (b *Buffer[T]) Len() int { return b.n }

// Counted returns what the held entries count against the budget.
func (b *Buffer[T]) Counted() int { return b.counted }

// Hold appends an entry, first dropping the oldest until the held entries
// and it fit the budget, and returns how many entries it dropped. An entry
// counting more than the budget on its own empties the buffer, itself
// included (and counted among those dropped): what is held is always the
// newest run of entries that fits. The payload is the concatenation of
// parts, copied.
func (b *Buffer[T]) Hold(v T, counted int, parts ...[]byte) (dropped int) {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if counted > b.budget {
		dropped = b.n + 1
		if b.onDrop != nil {
			for b.n > 0 {
				b.dropOldest()
			}
			b.scratch = concat(b.scratch[:0], parts)
			b.onDrop(v, b.scratch)
		}
		b.Reset()
		return dropped
	}
	for b.n > 0 && b.counted+counted > b.budget {
		b.dropOldest()
		dropped++
	}
	if b.n == 0 {
		b.head, b.used, b.vhead = 0, 0, 0
	}
	if need := b.used + header + size; need > len(b.ring) {
		b.grow(need)
	}
	var h [header]byte
	binary.BigEndian.PutUint32(h[0:], uint32(size))
	binary.BigEndian.PutUint32(h[4:], uint32(counted))
	b.put(h[:])
	for _, p := range parts {
		b.put(p)
	}
	b.pushValue(v)
	b.n++
	b.counted += counted
	return dropped
}

// Each calls f with every entry, oldest first. The payload is valid only
// during the call.
func (b *Buffer[T]) Each(f func(v T, payload []byte)) {
	for i, off := 0, 0; i < b.n; i++ {
		size, _ := b.header(off)
		if cap(b.scratch) < size {
			b.scratch = make([]byte, size)
		}
		p := b.scratch[:size]
		b.read(off+header, p)
		f(b.values[(b.vhead+i)%len(b.values)], p)
		off += header + size
	}
}

// Trim drops the oldest entries until what is held counts at most
// counted, and returns how many it dropped. The ring shrinks with them
// once it is mostly empty, so that memory given back by a trim is given
// back to the process: a host holding many sessions' buffers (the
// Importer's senders) bounds them all by what they hold now, not by what
// each once held.
func (b *Buffer[T]) Trim(counted int) (dropped int) {
	for b.n > 0 && b.counted > counted {
		b.dropOldest()
		dropped++
	}
	switch {
	case b.n == 0:
		b.Reset()
	case b.used < len(b.ring)/4 && len(b.ring) > 4<<10:
		ring := make([]byte, max(2*b.used, 4<<10))
		b.read(0, ring[:b.used])
		b.ring, b.head = ring, 0
	}
	return dropped
}

// Size returns the bytes of memory the buffer's ring takes: what it
// holds, and the room it has grown for.
func (b *Buffer[T]) Size() int { return len(b.ring) }

// Reset lets every entry go, and the memory that held them.
func (b *Buffer[T]) Reset() { *b = Buffer[T]{budget: b.budget, onDrop: b.onDrop} }

func (b *Buffer[T]) header(off int) (size, counted int) {
	var h [header]byte
	b.read(off, h[:])
	return int(binary.BigEndian.Uint32(h[0:])), int(binary.BigEndian.Uint32(h[4:]))
}

func (b *Buffer[T]) dropOldest() {
	size, counted := b.header(0)
	if b.onDrop != nil {
		b.onDrop(b.values[b.vhead], b.payload(size))
	}
	b.head = (b.head + header + size) % len(b.ring)
	b.used -= header + size
	var zero T
	b.values[b.vhead] = zero // let go of what the value refers to
	b.vhead = (b.vhead + 1) % len(b.values)
	b.n--
	b.counted -= counted
}

// payload returns the oldest entry's payload, of size bytes: a piece of
// the ring, or a copy in scratch when it wraps.
func (b *Buffer[T]) payload(size int) []byte {
	at := (b.head + header) % len(b.ring)
	if at+size <= len(b.ring) {
		return b.ring[at : at+size]
	}
	if cap(b.scratch) < size {
		b.scratch = make([]byte, size)
	}
	p := b.scratch[:size]
	b.read(header, p)
	return p
}

// concat appends the parts to dst.
func concat(dst []byte, parts [][]byte) []byte {
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

// put writes p at the ring's tail, wrapping at its end.
func (b *Buffer[T]) put(p []byte) {
	at := (b.head + b.used) % len(b.ring)
	n := copy(b.ring[at:], p)
	copy(b.ring, p[n:])
	b.used += len(p)
}

// read copies len(p) bytes from the ring at offset off from head.
func (b *Buffer[T]) read(off int, p []byte) {
	at := (b.head + off) % len(b.ring)
	n := copy(p, b.ring[at:])
	copy(p[n:], b.ring)
}

// grow makes the ring hold at least need bytes, doubling it but never past
// the budget, which suffices when entries count their headers (see Buffer).
func (b *Buffer[T]) grow(need int) {
	size := max(need, min(2*len(b.ring), b.budget), min(4<<10, b.budget))
	ring := make([]byte, size)
	if b.used > 0 {
		b.read(0, ring[:b.used])
	}
	b.ring, b.head = ring, 0
}

func (b *Buffer[T]) pushValue(v T) {
	if b.n == len(b.values) {
		values := make([]T, max(2*len(b.values), 16))
		for i := range b.n {
			values[i] = b.values[(b.vhead+i)%len(b.values)]
		}
		b.values, b.vhead = values, 0
	}
	b.values[(b.vhead+b.n)%len(b.values)] = v
}
