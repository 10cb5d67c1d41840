package exporter

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// What an Importer remembers of the spans it took: to take each once (a
// retry of a batch the sender was not told is stored, a Collector queue
// replaying after an outage or a restart), and to tell whether a span's
// parent has been placed. A span is remembered for the dedup window
// (ImporterConfig.DedupWindow) after it was placed, whatever becomes of
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

// spanRef identifies a span of a sender.
type spanRef struct {
	trace trace.TraceID
	span  trace.SpanID
}

// spanState is what became of a span the Importer remembers.
type spanState uint8

const (
	stateNone   spanState = iota
	statePlaced           // stamped: recorded, or let go by the rules
	stateWanted           // not placed yet; a record was placed below it
)

// seenTable is the spans an Importer remembers, over every sender.
type seenTable struct {
	fps   []uint64 // fingerprints; 0 is an empty slot
	words []uint32 // state<<30 | the second (from the Importer's epoch) it was set
	n     int      // spans remembered
	max   int      // the most slots the table may have (ImporterConfig.DedupBytes)
	key   hashKey
	// forgotten counts spans forgotten before the dedup window passed,
	// to stay within the bound.
	forgotten int64
}

// newSeenTable returns an empty table of at most maxBytes: its largest
// table, and the half it grows from, fit in them together.
func newSeenTable(maxBytes int) seenTable {
	return seenTable{max: max(maxBytes/seenSlotBytes*2/3, minSeenSlots), key: newHashKey()}
}

// hashKey is the secret the fingerprints are hashed under: a sender
// cannot make its spans' fingerprints meet another's, nor a span's meet
// one of its own, but by a one in 2^64 chance.
type hashKey [4]uint64

// hashKeyBytes is a hashKey's size in the store.
const hashKeyBytes = 32

// newHashKey returns a random key.
func newHashKey() hashKey {
	var b [hashKeyBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hashKeyOf(b[:])
}

// hashKeyOf reads a key from its bytes.
func hashKeyOf(b []byte) hashKey {
	var k hashKey
	for i := range k {
		k[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return k
}

// bytes returns the key's bytes.
func (k hashKey) bytes() []byte {
	b := make([]byte, 0, hashKeyBytes)
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
func (t *seenTable) salt(key string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a, then mixed under the key
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return mum(h^t.key[0], uint64(len(key))^t.key[1])
}

// fingerprint returns the fingerprint of span ref of the sender salt:
// never 0, which marks an empty slot.
func (t *seenTable) fingerprint(salt uint64, ref spanRef) uint64 {
	t0 := binary.LittleEndian.Uint64(ref.trace[:8])
	t1 := binary.LittleEndian.Uint64(ref.trace[8:])
	sp := binary.LittleEndian.Uint64(ref.span[:])
	h := mum(t0^t.key[0], t1^t.key[1])
	h = mum(h^sp^t.key[2], salt^t.key[3])
	if h != 0 {
		return h
	}
	return 1
}

// home is where the probe for fp starts: its high bits, scaled to the
// table (a table of any size, without a division).
func (t *seenTable) home(fp uint64) int {
	hi, _ := bits.Mul64(fp, uint64(len(t.fps)))
	return int(hi)
}

// find returns the slot of fp and true, or the empty slot where it would
// go and false. The table is not empty.
func (t *seenTable) find(fp uint64) (int, bool) {
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

func word(st spanState, sec uint32) uint32 { return uint32(st)<<30 | sec&(1<<30-1) }
func wordState(w uint32) spanState         { return spanState(w >> 30) }
func wordSecond(w uint32) uint32           { return w & (1<<30 - 1) }

// state returns what became of the span fp.
func (t *seenTable) state(fp uint64) spanState {
	if t.n == 0 {
		return stateNone
	}
	if i, ok := t.find(fp); ok {
		return wordState(t.words[i])
	}
	return stateNone
}

// set sets the state of fp, at the second sec, and reports whether fp is
// new to the table. A table at its bound makes room by forgetting its
// oldest spans, at least a quarter of them.
func (t *seenTable) set(fp uint64, st spanState, sec uint32) bool {
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
func (t *seenTable) resize(slots int) {
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
func (t *seenTable) sweep(from uint32) int {
	if t.n == 0 {
		if t.fps != nil {
			*t = seenTable{max: t.max, key: t.key, forgotten: t.forgotten}
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
func (t *seenTable) forgetOldest(now uint32, keep int) {
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
func (t *seenTable) removeIf(drop func(uint32) bool) int {
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

// maxLookAhead is the most spans whose room lookAhead keeps for the next
// batch.
const maxLookAhead = 8192

// lookAhead is what take knows of a batch's spans before it takes them:
// the state of each valid span, and of its parent. Looked up in one loop
// of lookups that do not wait for each other, the table's cache misses
// (a span's slot is anywhere in tens of megabytes) overlap, where one
// lookup between each span's other work would wait for each in turn.
// Nothing take does before it places spans changes them.
type lookAhead struct {
	fps    []uint64    // each valid span's fingerprint, then its parent's (0: none)
	states []spanState // their states
	at     int         // the next span's pair
}

// lookUp looks up spans, salt's (the first one valid), in t.
func (l *lookAhead) lookUp(t *seenTable, salt uint64, spans []ImportedSpan) {
	if cap(l.fps) > 2*maxLookAhead {
		l.fps, l.states = nil, nil // what a huge batch grew goes
	}
	l.fps, l.at = l.fps[:0], 0
	for i := range spans {
		s := &spans[i]
		if !s.TraceID.IsValid() || !s.SpanID.IsValid() {
			continue
		}
		parent := uint64(0)
		if s.ParentSpanID.IsValid() {
			parent = t.fingerprint(salt, spanRef{s.TraceID, s.ParentSpanID})
		}
		l.fps = append(l.fps, t.fingerprint(salt, spanRef{s.TraceID, s.SpanID}), parent)
	}
	l.states = l.states[:0]
	for _, fp := range l.fps {
		st := stateNone
		if fp != 0 {
			st = t.state(fp)
		}
		l.states = append(l.states, st)
	}
}

// next returns the next valid span's state and its parent's.
func (l *lookAhead) next() (span, parent spanState) {
	if l.at+1 >= len(l.states) {
		return stateNone, stateNone
	}
	span, parent = l.states[l.at], l.states[l.at+1]
	l.at += 2
	return span, parent
}

// bytes is the memory the table holds.
func (t *seenTable) bytes() int { return len(t.fps) * seenSlotBytes }

// second is now as the seen table counts it: seconds from the Importer's
// epoch.
func (im *Importer) second(now time.Time) uint32 {
	return uint32(max(now.Sub(im.epoch), 0) / time.Second)
}

// fp returns the fingerprint of span ref of the sender salt.
func (im *Importer) fp(salt uint64, ref spanRef) uint64 { return im.seen.fingerprint(salt, ref) }

// seenState returns what became of span ref of the session rs.
func (im *Importer) seenState(rs *remoteSession, ref spanRef) spanState {
	return im.seen.state(im.fp(rs.salt, ref))
}

// remember sets the state of span ref of the session rs, and reports
// whether it was new.
func (im *Importer) remember(rs *remoteSession, ref spanRef, st spanState, now time.Time) bool {
	return im.seen.set(im.fp(rs.salt, ref), st, im.second(now))
}

// sweepEvery is how often the seen table is swept.
const sweepEvery = 10 * time.Second

// sweepSeen forgets spans placed more than the dedup window ago, every
// sweepEvery. im.mu is held.
func (im *Importer) sweepSeen(now time.Time) {
	if now.Sub(im.swept) < sweepEvery {
		return
	}
	im.swept = now
	sec, window := im.second(now), uint32(im.cfg.DedupWindow/time.Second)
	from := uint32(0)
	if sec > window {
		from = sec - window
	}
	im.seen.sweep(from)
}
