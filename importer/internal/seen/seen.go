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
// shape. Five slots make a bucket of 64 bytes, one cache line, each word
// in the line of its fingerprint: a lookup in a table of tens of
// megabytes usually costs one cache miss. Buckets are found by linear
// probing from the fingerprint, at most four fifths of the slots used, so
// a span costs 16 to 32 bytes; nothing in it is a pointer, so the
// garbage collector never scans it. Two spans share a fingerprint with a
// chance of one in 2^64 per pair: with three million spans remembered, a
// new span is taken for one seen before about once in 6·10^12 spans.

// The table's bounds.
const (
	// bucketSlots is how many slots a bucket holds: its fingerprints,
	// its words and 4 spare bytes fill 64.
	bucketSlots = 5
	// bucketBytes is what a bucket costs.
	bucketBytes = 64
	// minBuckets is the smallest table; it grows from there.
	minBuckets = 1 << 8
)

// bucket is five slots in one cache line.
type bucket struct {
	fps   [bucketSlots]uint64 // fingerprints; 0 is an empty slot
	words [bucketSlots]uint32 // state<<30 | the second (from the Importer's epoch) it was set
	_     uint32
}

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
	buckets []bucket
	n       int // spans remembered
	max     int // the most buckets the table may have (Config.DedupBytes)
	key     HashKey
	// forgotten counts spans forgotten before the dedup window passed,
	// to stay within the bound.
	forgotten int64
	sink      uint64 // what touch read, so that its reads are kept
}

// New returns an empty table of at most maxBytes: its largest
// table, and the half it grows from, fit in them together.
func New(maxBytes int) Table {
	return Table{max: max(maxBytes/bucketBytes*2/3, minBuckets), key: newHashKey()}
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

// home is the bucket where the probe for fp starts: its high bits,
// scaled to the table (a table of any size, without a division).
func (t *Table) home(fp uint64) int {
	hi, _ := bits.Mul64(fp, uint64(len(t.buckets)))
	return int(hi)
}

// find returns the bucket and slot of fp and true, or the empty slot
// where it would go and false: the first in the first bucket from fp's
// home that has one. The table is not empty.
//
// A span's bucket is its home or, past it, one that every bucket from
// its home to it was full when it was put there; a removal keeps that
// true (removeIf). So a probe ends at the first bucket with an empty
// slot, and slots in a bucket are in no order.
func (t *Table) find(fp uint64) (int, int, bool) {
	b := t.home(fp)
	for {
		bk := &t.buckets[b]
		free := -1
		for k, f := range &bk.fps {
			if f == fp {
				return b, k, true
			}
			if f == 0 && free < 0 {
				free = k
			}
		}
		if free >= 0 {
			return b, free, false
		}
		if b++; b == len(t.buckets) {
			b = 0
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
	if b, k, ok := t.find(fp); ok {
		return wordState(t.buckets[b].words[k])
	}
	return None
}

// touch reads a word of the home bucket of each of fps (0: none), in a
// loop of reads that do not wait for each other nor for a branch: their
// cache misses overlap, and the lookups that follow find the lines in
// the cache.
func (t *Table) touch(fps []uint64) {
	if len(t.buckets) == 0 {
		return
	}
	s := t.sink
	for _, fp := range fps {
		s += t.buckets[t.home(fp)].fps[0]
	}
	t.sink = s
}

// Touch brings the bucket where fp is, or would go, into the cache,
// without waiting for it: called for each of the spans about to be set
// or looked up, in a loop of other work, ahead of them, their cache
// misses overlap with that work and with each other.
func (t *Table) Touch(fp uint64) {
	if len(t.buckets) != 0 {
		t.sink += t.buckets[t.home(fp)].fps[0]
	}
}

// set sets the state of fp, at the second sec, and reports whether fp is
// new to the table. A table at its bound makes room by forgetting its
// oldest spans, at least half of them.
func (t *Table) Set(fp uint64, st State, sec uint32) bool {
	if len(t.buckets) == 0 {
		t.resize(min(minBuckets, t.max))
	}
	b, k, ok := t.find(fp)
	if ok {
		t.buckets[b].words[k] = word(st, sec)
		return false
	}
	if slots := len(t.buckets) * bucketSlots; 5*(t.n+1) > 4*slots {
		if len(t.buckets) < t.max {
			t.resize(min(2*len(t.buckets), t.max))
		} else {
			t.forgetOldest(sec, slots*2/5)
		}
		b, k, _ = t.find(fp)
	}
	t.buckets[b].fps[k], t.buckets[b].words[k] = fp, word(st, sec)
	t.n++
	return true
}

// resize moves the spans into a table of n buckets.
func (t *Table) resize(n int) {
	old := t.buckets
	t.buckets = make([]bucket, n)
	for j := range old {
		for k, fp := range &old[j].fps {
			if fp != 0 {
				b, i, _ := t.find(fp)
				t.buckets[b].fps[i], t.buckets[b].words[i] = fp, old[j].words[k]
			}
		}
	}
}

// sweep forgets the spans set before the second from, and returns how
// many it forgot. A table swept down to an eighth of its slots is made
// smaller, so that what a burst grew is given back.
func (t *Table) Sweep(from uint32) int {
	if t.n == 0 {
		if t.buckets != nil {
			*t = Table{max: t.max, key: t.key, forgotten: t.forgotten}
		}
		return 0
	}
	n := t.removeIf(func(w uint32) bool { return wordSecond(w) < from })
	if len(t.buckets) > minBuckets && 8*t.n < len(t.buckets)*bucketSlots {
		t.resize(max(minBuckets, t.n*8/3/bucketSlots+1))
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
	for j := range t.buckets {
		bk := &t.buckets[j]
		for k, fp := range &bk.fps {
			if fp != 0 {
				ages[min(int(now-min(wordSecond(bk.words[k]), now)), len(ages)-1)]++
			}
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

// full reports whether bucket b has no empty slot.
func (t *Table) full(b int) bool {
	for _, fp := range &t.buckets[b].fps {
		if fp == 0 {
			return false
		}
	}
	return true
}

// removeIf removes every span whose word drop says to, in place, and
// returns how many went. One pass over the buckets from one that was not
// full (no probe crosses it): once a slot was freed in a run of full
// buckets, each span after it in the run is put back where a probe from
// its home finds it first, which is never past its bucket. A bucket that
// was not full ends the run: no span after it probes through it.
func (t *Table) removeIf(drop func(uint32) bool) int {
	nb := len(t.buckets)
	start := 0
	for t.full(start) {
		start++ // the table is never full: at most four fifths used
	}
	removed, hole := 0, false
	for j := 1; j <= nb; j++ {
		b := start + j
		if b >= nb {
			b -= nb
		}
		wasFull := t.full(b)
		bk := &t.buckets[b]
		for k, fp := range &bk.fps {
			switch {
			case fp == 0:
			case drop(bk.words[k]):
				bk.fps[k] = 0
				removed++
			case hole:
				w := bk.words[k]
				bk.fps[k] = 0
				c, i, _ := t.find(fp)
				t.buckets[c].fps[i], t.buckets[c].words[i] = fp, w
			}
		}
		hole = wasFull && (hole || !t.full(b))
	}
	t.n -= removed
	return removed
}

// bytes is the memory the table holds.
func (t *Table) Bytes() int { return len(t.buckets) * bucketBytes }

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
