// Package seen is what an Importer remembers of the spans it took, for
// the dedup window: one bounded table of 64-bit fingerprints over every
// sender, with each span's state and the second it was placed.
package seen

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"

	"go.opentelemetry.io/otel/trace"
)

// What an Importer remembers of the spans it took: to take each once (a
// retry of a batch the sender was not told is stored, a Collector queue
// replaying after an outage or a restart), and to tell whether a span's
// parent has been placed. A span is remembered for the dedup window
// (Config.DedupWindow) after it was placed, whatever becomes of
// its session meanwhile: a span sent again after its session ended is
// still known. A span still waiting is known by its trace's waiting spans
// (liveTrace), not here.
//
// The set is one table for every sender: a slot is a span's 64-bit
// fingerprint — its sender's key, trace id and span id hashed under a
// secret key (random; an Importer that keeps no records keeps it in its
// store, with the fingerprints of what it handed on) — and a word holding
// its state and the second it was placed, 12 bytes, whatever the traces'
// shape. Five slots and a count of the spans that went on past them make
// a bucket of 64 bytes, one cache line, each word in the line of its
// fingerprint: a lookup in a table of tens of megabytes usually costs one
// cache miss, for a span remembered or not. Buckets are found by linear
// probing from the fingerprint, at most four fifths of the slots used
// (12.8 bytes a slot), so a span costs 16 to 32 bytes, as the table
// grows by doubling; nothing in it is a pointer, so the
// garbage collector never scans it. Two spans share a fingerprint with a
// chance of one in 2^64 per pair: with three million spans remembered, a
// new span is taken for one seen before about once in 6·10^12 spans.

// Ref identifies a span of a sender.
type Ref struct {
	Trace trace.TraceID
	Span  trace.SpanID
}

// State is what became of a span the Importer remembers.
type State uint8

const (
	None   State = iota
	Placed       // stamped: recorded, or let go by the rules
	Wanted       // not placed yet; a record was placed below it
)

// HashKey is the secret the fingerprints are hashed under: a sender
// cannot make its spans' fingerprints meet another's, nor a span's meet
// one of its own, but by a one in 2^64 chance.
type HashKey [4]uint64

// HashKeyBytes is a HashKey's size in the store.
const HashKeyBytes = 32

// newHashKey returns a random key.
func newHashKey() HashKey {
	var b [HashKeyBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return HashKeyOf(b[:])
}

// HashKeyOf reads a key from its bytes.
func HashKeyOf(b []byte) HashKey {
	var k HashKey
	for i := range k {
		k[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return k
}

// bytes returns the key's bytes.
func (k HashKey) Bytes() []byte {
	b := make([]byte, 0, HashKeyBytes)
	for _, w := range k {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// mum is the 64-bit folding of a 128-bit product (wyhash's mixing step).
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// salt returns what a sender's key adds to its spans' fingerprints, so
// that two senders' spans never meet.
func (t *Table) Salt(key string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a, then mixed under the key
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return mum(h^t.key[0], uint64(len(key))^t.key[1])
}

// fingerprint returns the fingerprint of span ref of the sender salt:
// never 0, which marks an empty slot.
func (t *Table) Fingerprint(salt uint64, ref Ref) uint64 {
	t0 := binary.LittleEndian.Uint64(ref.Trace[:8])
	t1 := binary.LittleEndian.Uint64(ref.Trace[8:])
	sp := binary.LittleEndian.Uint64(ref.Span[:])
	h := mum(t0^t.key[0], t1^t.key[1])
	h = mum(h^sp^t.key[2], salt^t.key[3])
	if h != 0 {
		return h
	}
	return 1
}

func word(st State, sec uint32) uint32 { return uint32(st)<<30 | sec&(1<<30-1) }
func wordState(w uint32) State         { return State(w >> 30) }
func wordSecond(w uint32) uint32       { return w & (1<<30 - 1) }
