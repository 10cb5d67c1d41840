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
// shape. Slots are found by linear
// probing from the fingerprint, at most three quarters of them used, so
// a span costs 16 to 32 bytes; nothing in it is a pointer, so the
// garbage collector never scans it. Two spans share a fingerprint with a
// chance of one in 2^64 per pair: with three million spans remembered, a
// new span is taken for one seen before about once in 6·10^12 spans.

// The table's bounds.
const (
	// seenSlotBytes is what a slot of the table costs: its fingerprint
	// and its word.
	seenSlotBytes = 12
	// minSeenSlots is the smallest table; it grows from there.
	minSeenSlots = 1 << 10
)

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

// Table is the spans an Importer remembers, over every sender.
type Table struct {
	fps   []uint64 // fingerprints; 0 is an empty slot
	words []uint32 // state<<30 | the second (from the Importer's epoch) it was set
	n     int      // spans remembered
	max   int      // the most slots the table may have (Config.DedupBytes)
	key   HashKey
	// forgotten counts spans forgotten before the dedup window passed,
	// to stay within the bound.
	forgotten int64
}

// New returns an empty table of at most maxBytes: its largest
// table, and the half it grows from, fit in them together.
func New(maxBytes int) Table {
	return Table{max: max(maxBytes/seenSlotBytes*2/3, minSeenSlots), key: newHashKey()}
}

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

// home is where the probe for fp starts: its high bits, scaled to the
// table (a table of any size, without a division).
func (t *Table) home(fp uint64) int {
	hi, _ := bits.Mul64(fp, uint64(len(t.fps)))
	return int(hi)
}

// find returns the slot of fp and true, or the empty slot where it would
// go and false. The table is not empty.
func (t *Table) find(fp uint64) (int, bool) {
	i := t.home(fp)
	for {
		switch t.fps[i] {
		case fp:
			return i, true
		case 0:
			return i, false
		}
		if i++; i == len(t.fps) {
			i = 0
		}
	}
}

func word(st State, sec uint32) uint32 { return uint32(st)<<30 | sec&(1<<30-1) }
func wordState(w uint32) State         { return State(w >> 30) }
func wordSecond(w uint32) uint32       { return w & (1<<30 - 1) }

// state returns what became of the span fp.
func (t *Table) State(fp uint64) State {
	if t.n == 0 {
		return None
	}
	if i, ok := t.find(fp); ok {
		return wordState(t.words[i])
	}
	return None
}

// set sets the state of fp, at the second sec, and reports whether fp is
// new to the table. A table at its bound makes room by forgetting its
// oldest spans, at least a quarter of them.
func (t *Table) Set(fp uint64, st State, sec uint32) bool {
	if len(t.fps) == 0 {
		t.resize(min(minSeenSlots, t.max))
	}
	i, ok := t.find(fp)
	if ok {
		t.words[i] = word(st, sec)
		return false
	}
	if 4*(t.n+1) > 3*len(t.fps) {
		if len(t.fps) < t.max {
			t.resize(min(2*len(t.fps), t.max))
		} else {
			t.forgetOldest(sec, len(t.fps)*3/8)
		}
		i, _ = t.find(fp)
	}
	t.fps[i], t.words[i] = fp, word(st, sec)
	t.n++
	return true
}

// resize moves the spans into a table of slots slots.
func (t *Table) resize(slots int) {
	old, oldWords := t.fps, t.words
	t.fps, t.words = make([]uint64, slots), make([]uint32, slots)
	for j, fp := range old {
		if fp != 0 {
			i, _ := t.find(fp)
			t.fps[i], t.words[i] = fp, oldWords[j]
		}
	}
}

// sweep forgets the spans set before the second from, and returns how
// many it forgot. A table swept down to an eighth of its slots is made
// smaller, so that what a burst grew is given back.
func (t *Table) Sweep(from uint32) int {
	if t.n == 0 {
		if t.fps != nil {
			*t = Table{max: t.max, key: t.key, forgotten: t.forgotten}
		}
		return 0
	}
	n := t.removeIf(func(w uint32) bool { return wordSecond(w) < from })
	if len(t.fps) > minSeenSlots && 8*t.n < len(t.fps) {
		t.resize(max(minSeenSlots, t.n*8/3))
	}
	return n
}

// forgetOldest forgets the oldest spans until at most keep are left,
// counted in forgotten: the window shrinks for as long as the spans of a
// whole window would not fit. now is the current second.
func (t *Table) forgetOldest(now uint32, keep int) {
	if t.n <= keep {
		return
	}
	// How many spans were set at each age, in seconds (the last bucket
	// holds every older one): the cut is the youngest age at which the
	// spans younger than it fit.
	var ages [1024]int
	for i, fp := range t.fps {
		if fp != 0 {
			ages[min(int(now-min(wordSecond(t.words[i]), now)), len(ages)-1)]++
		}
	}
	cut, kept := 0, 0
	for cut < len(ages) && kept+ages[cut] <= keep {
		kept += ages[cut]
		cut++
	}
	// Spans of age >= cut go; a cut of 0 (a single second holding more
	// than keep) forgets every span.
	t.forgotten += int64(t.removeIf(func(w uint32) bool { return int(now-min(wordSecond(w), now)) >= cut }))
}

// removeIf removes every span whose word drop says to, in place, and
// returns how many went. One pass from a slot that was empty (no probe
// crosses it): a span after a freed slot in its run is put back where a
// probe from its home finds it first, which is never past where it was.
func (t *Table) removeIf(drop func(uint32) bool) int {
	start := 0
	for t.fps[start] != 0 {
		start++ // the table is never full: at most three quarters used
	}
	removed, hole := 0, false
	for k := 1; k <= len(t.fps); k++ {
		i := (start + k) % len(t.fps)
		fp := t.fps[i]
		switch {
		case fp == 0:
			hole = false // a run ends: nothing after it probes through
		case drop(t.words[i]):
			t.fps[i] = 0
			removed++
			hole = true
		case hole:
			w := t.words[i]
			t.fps[i] = 0
			j, _ := t.find(fp)
			t.fps[j], t.words[j] = fp, w
		}
	}
	t.n -= removed
	return removed
}

// bytes is the memory the table holds.
func (t *Table) Bytes() int { return len(t.fps) * seenSlotBytes }

// Len is how many spans the table remembers.
func (t *Table) Len() int { return t.n }

// Forgotten is how many spans were forgotten before the dedup window
// passed, to stay within the bound.
func (t *Table) Forgotten() int64 { return t.forgotten }

// Key is the secret the fingerprints are hashed under.
func (t *Table) Key() HashKey { return t.key }

// SetKey makes the table hash under k (one read back from a store); it
// is empty.
func (t *Table) SetKey(k HashKey) { t.key = k }
