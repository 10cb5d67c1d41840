package seen

import "math/bits"

// The table's bounds.
const (
	// bucketSlots is how many slots a bucket holds: its fingerprints,
	// its words and its overflow count fill 64 bytes.
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
	// over counts the spans whose probe went on past this bucket, full
	// when each was put: a lookup ends at a bucket whose count is 0.
	over uint32
}

// Table is the spans an Importer remembers, over every sender.
//
// A span is in its home bucket or, past it, in the first bucket that
// had an empty slot when it was put there, every bucket between
// counting it in over. A lookup goes from the home bucket until it
// finds the span or a bucket that no span went past: usually one cache
// line, for a span remembered or not. Slots in a bucket are in no
// order.
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

// home is the bucket where the probe for fp starts: its high bits,
// scaled to the table (a table of any size, without a division).
func (t *Table) home(fp uint64) int {
	hi, _ := bits.Mul64(fp, uint64(len(t.buckets)))
	return int(hi)
}

// next is the bucket after b.
func (t *Table) next(b int) int {
	if b++; b == len(t.buckets) {
		return 0
	}
	return b
}

// find returns the bucket and slot of fp and true, or false. The table
// is not empty.
func (t *Table) find(fp uint64) (int, int, bool) {
	b := t.home(fp)
	for {
		bk := &t.buckets[b]
		for k, f := range &bk.fps {
			if f == fp {
				return b, k, true
			}
		}
		if bk.over == 0 {
			return 0, 0, false
		}
		b = t.next(b)
	}
}

// put puts fp, of word w, in the first empty slot from its home, counted
// in over by every full bucket it passes. The table is not full.
func (t *Table) put(fp uint64, w uint32) {
	for b := t.home(fp); ; b = t.next(b) {
		bk := &t.buckets[b]
		for k, f := range &bk.fps {
			if f == 0 {
				bk.fps[k], bk.words[k] = fp, w
				return
			}
		}
		bk.over++
	}
}

// State returns what became of the span fp.
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

// Set sets the state of fp, at the second sec, and reports whether fp is
// new to the table. A table at its bound makes room by forgetting its
// oldest spans, at least half of them.
func (t *Table) Set(fp uint64, st State, sec uint32) bool {
	if len(t.buckets) == 0 {
		t.resize(min(minBuckets, t.max))
	}
	if t.n > 0 {
		if b, k, ok := t.find(fp); ok {
			t.buckets[b].words[k] = word(st, sec)
			return false
		}
	}
	if slots := len(t.buckets) * bucketSlots; 5*(t.n+1) > 4*slots {
		if len(t.buckets) < t.max {
			t.resize(min(2*len(t.buckets), t.max))
		} else {
			t.forgetOldest(sec, slots*2/5)
		}
	}
	t.put(fp, word(st, sec))
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
				t.put(fp, old[j].words[k])
			}
		}
	}
}

// Sweep forgets the spans set before the second from, and returns how
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
// full (no span went past it): once a slot was freed in a run of full
// buckets, each span after it in the run is put back in the first empty
// slot from its home, which is never past its bucket. A bucket that was
// not full ends the run. Then the overflow counts are counted again.
func (t *Table) removeIf(drop func(uint32) bool) int {
	start := 0
	for t.full(start) {
		start++ // the table is never full: at most four fifths used
	}
	removed, hole := 0, false
	for j, b := 0, start; j < len(t.buckets); j++ {
		b = t.next(b)
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
				t.put(fp, w)
			}
		}
		hole = wasFull && (hole || !t.full(b))
	}
	t.n -= removed
	for b := range t.buckets {
		t.buckets[b].over = 0
	}
	for c := range t.buckets {
		for _, fp := range &t.buckets[c].fps {
			if fp != 0 {
				for b := t.home(fp); b != c; b = t.next(b) {
					t.buckets[b].over++
				}
			}
		}
	}
	return removed
}

// Bytes is the memory the table holds.
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
