package exporter

import (
	"time"

	"go.opentelemetry.io/otel/trace"
)

// What an Importer remembers of the spans a session took: to take each
// once (a retry of a batch the sender was not told is stored, a Collector
// queue replaying after a restart), and to tell whether a span's parent
// has been placed. Spans are remembered for DedupWindow after they were
// placed. A span still waiting is known by its trace's waiting spans
// (liveTrace), not here.
//
// The set keeps a trace's spans together: a map of traces, each holding
// its first spans inline and the rest in chunks of a slab, linked. A map
// of every span of the window (a million of them for a gateway at 10,000
// spans a second) missed the cache at every lookup, three a span; by
// trace, the spans of one trace share the lines they are looked up in,
// and for traces of ten spans the map is a tenth the size. Nothing in it
// is a pointer, so the garbage collector never scans it. A trace past
// maxTraceSpans keeps its later spans in a map by span, so that a trace
// of a hundred thousand spans is not searched span by span.

// maxSeen bounds the spans an Importer remembers over every session.
// Their memory depends on the traces' shape (measured at 2^20 spans): 20
// bytes a span in traces of ten spans, 32 in traces of a hundred, 110 in
// traces of one span, where a map by span cost 80 whatever the shape
// (BenchmarkSeenSetMemory); so 20 to 110 MiB at most. Past it the window shrinks until they fit,
// oldest first: a gateway taking 10,000 spans a second remembers the
// last 100 seconds of them.
const maxSeen = 1 << 20

// spanRef identifies a span in a session.
type spanRef struct {
	trace trace.TraceID
	span  trace.SpanID
}

// spanState is what became of a span a session remembers.
type spanState uint8

const (
	stateNone   spanState = iota
	statePlaced           // stamped: recorded, or let go by the marks policy
	stateWanted           // not placed yet; a record was placed below it
)

// seen is one remembered span: its state, and the second (from the
// Importer's epoch) it was last changed.
type seen struct {
	state spanState
	at    uint32
}

// The shape of a trace's entry: inlineSpans spans in the map's value,
// then chunks of chunkSpans, up to maxTraceSpans in all; the rest in the
// map by span.
const (
	inlineSpans   = 2
	chunkSpans    = 8
	maxTraceSpans = 64
)

// seenTrace is a trace's entry: its first spans inline (ids[:min(n,
// inlineSpans)]), then the chunks from head (an index into the slab,
// plus one; 0 is none), every chunk but the last full. big says that
// spans of it are in the set's map by span too.
type seenTrace struct {
	ids  [inlineSpans]trace.SpanID
	at   [inlineSpans]uint32
	st   [inlineSpans]spanState
	big  bool
	n    uint8 // spans inline and in chunks
	head int32
}

// seenChunk is up to chunkSpans more spans of a trace, and the next
// chunk (plus one).
type seenChunk struct {
	ids  [chunkSpans]trace.SpanID
	at   [chunkSpans]uint32
	st   [chunkSpans]spanState
	n    int32
	next int32
}

// seenSet is the spans a session remembers.
type seenSet struct {
	traces map[trace.TraceID]seenTrace
	chunks []seenChunk // the slab: chunks of traces, and free ones
	free   int32       // the first free chunk, plus one (linked by next)
	used   int         // chunks in use
	big    map[spanRef]seen
	n      int // spans remembered
}

// find returns where span id of t is: inline at i (c == 0), or in chunk
// c-1 at i; ok false when t holds it in neither.
func (s *seenSet) find(t *seenTrace, id trace.SpanID) (c int32, i int, ok bool) {
	for i := range min(int(t.n), inlineSpans) {
		if t.ids[i] == id {
			return 0, i, true
		}
	}
	for c := t.head; c != 0; c = s.chunks[c-1].next {
		ch := &s.chunks[c-1]
		for i := range int(ch.n) {
			if ch.ids[i] == id {
				return c, i, true
			}
		}
	}
	return 0, 0, false
}

func (s *seenSet) state(k spanRef) spanState {
	t, ok := s.traces[k.trace]
	if !ok {
		return stateNone
	}
	if c, i, ok := s.find(&t, k.span); ok {
		if c == 0 {
			return t.st[i]
		}
		return s.chunks[c-1].st[i]
	}
	if t.big {
		return s.big[k].state
	}
	return stateNone
}

// set sets the state of k, and reports whether k is new to the set.
func (s *seenSet) set(k spanRef, st spanState, at uint32) bool {
	if s.traces == nil {
		s.traces = make(map[trace.TraceID]seenTrace)
	}
	t := s.traces[k.trace]
	if c, i, ok := s.find(&t, k.span); ok {
		if c == 0 {
			t.st[i], t.at[i] = st, at
			s.traces[k.trace] = t
		} else {
			ch := &s.chunks[c-1]
			ch.st[i], ch.at[i] = st, at
		}
		return false
	}
	if t.big {
		if _, ok := s.big[k]; ok {
			s.big[k] = seen{st, at}
			return false
		}
	}
	s.n++
	switch {
	case t.n >= maxTraceSpans:
		if s.big == nil {
			s.big = make(map[spanRef]seen)
		}
		s.big[k] = seen{st, at}
		if t.big {
			return true // t is as it was
		}
		t.big = true
	case t.n < inlineSpans:
		t.ids[t.n], t.st[t.n], t.at[t.n] = k.span, st, at
		t.n++
	default:
		s.appendChunked(&t, k.span, st, at)
		t.n++
	}
	s.traces[k.trace] = t
	return true
}

// appendChunked puts a span in t's last chunk, or in a new one after it.
func (s *seenSet) appendChunked(t *seenTrace, id trace.SpanID, st spanState, at uint32) {
	last := int32(0)
	for c := t.head; c != 0; c = s.chunks[c-1].next {
		last = c
	}
	if last == 0 || s.chunks[last-1].n == chunkSpans {
		c := s.newChunk()
		if last == 0 {
			t.head = c
		} else {
			s.chunks[last-1].next = c
		}
		last = c
	}
	ch := &s.chunks[last-1]
	ch.ids[ch.n], ch.st[ch.n], ch.at[ch.n] = id, st, at
	ch.n++
}

// newChunk returns an empty chunk, plus one: a free one, or a new one.
func (s *seenSet) newChunk() int32 {
	s.used++
	if c := s.free; c != 0 {
		s.free = s.chunks[c-1].next
		s.chunks[c-1] = seenChunk{}
		return c
	}
	s.chunks = append(s.chunks, seenChunk{})
	return int32(len(s.chunks))
}

func (s *seenSet) len() int { return s.n }

// sweep forgets the spans remembered since before the second from, and
// returns how many it forgot. (A waiting span that was wanted keeps that
// in its pendingSpan.)
func (s *seenSet) sweep(from uint32) int {
	before := s.n
	for id, t := range s.traces {
		was := int(t.n)
		s.sweepTrace(&t, from)
		s.n -= was - int(t.n)
		t.big = false // set again below for the spans left in big
		if t.n == 0 {
			delete(s.traces, id)
		} else {
			s.traces[id] = t
		}
	}
	for k, v := range s.big {
		if v.at < from {
			delete(s.big, k)
			s.n--
			continue
		}
		t := s.traces[k.trace]
		if !t.big {
			t.big = true
			s.traces[k.trace] = t
		}
	}
	switch {
	case s.n == 0:
		*s = seenSet{} // maps and slabs keep their size once grown: give them back
	case len(s.big) == 0:
		s.big = nil
	}
	if len(s.chunks) > 64 && s.used < len(s.chunks)/4 {
		s.compact()
	}
	return before - s.n
}

// sweepTrace keeps t's spans from the second from, in their order and
// packed to the front of its inline spans and chunks, and frees the
// chunks it no longer needs; t.n is then the spans it kept.
func (s *seenSet) sweepTrace(t *seenTrace, from uint32) {
	kept := 0
	// put writes the kept-th span: never past the one being read, for
	// every chunk but the last is full.
	put := func(id trace.SpanID, st spanState, at uint32) {
		if kept < inlineSpans {
			t.ids[kept], t.st[kept], t.at[kept] = id, st, at
		} else {
			j := kept - inlineSpans
			c := t.head
			for range j / chunkSpans {
				c = s.chunks[c-1].next
			}
			ch := &s.chunks[c-1]
			ch.ids[j%chunkSpans], ch.st[j%chunkSpans], ch.at[j%chunkSpans] = id, st, at
		}
		kept++
	}
	for i := range min(int(t.n), inlineSpans) {
		if t.at[i] >= from {
			put(t.ids[i], t.st[i], t.at[i])
		}
	}
	for c := t.head; c != 0; c = s.chunks[c-1].next {
		ch := &s.chunks[c-1]
		for i := range int(ch.n) {
			if ch.at[i] >= from {
				put(ch.ids[i], ch.st[i], ch.at[i])
			}
		}
	}
	rest := max(kept-inlineSpans, 0)
	prev := int32(0)
	for c := t.head; c != 0; {
		ch := &s.chunks[c-1]
		next := ch.next
		if rest > 0 {
			ch.n = int32(min(rest, chunkSpans))
			rest -= int(ch.n)
			prev = c
		} else {
			if prev == 0 {
				t.head = 0
			} else {
				s.chunks[prev-1].next = 0
			}
			*ch = seenChunk{next: s.free}
			s.free = c
			s.used--
		}
		c = next
	}
	t.n = uint8(kept)
}

// compact moves the chunks in use into a slab of their own and lets the
// free ones go, so that once swept the slab is at most four times what
// is in use, however large a burst made it.
func (s *seenSet) compact() {
	chunks := make([]seenChunk, 0, s.used)
	for id, t := range s.traces {
		prev := int32(0)
		for c := t.head; c != 0; c = s.chunks[c-1].next {
			chunks = append(chunks, s.chunks[c-1])
			nc := int32(len(chunks))
			chunks[nc-1].next = 0
			if prev == 0 {
				t.head = nc
			} else {
				chunks[prev-1].next = nc
			}
			prev = nc
		}
		s.traces[id] = t
	}
	s.chunks, s.free = chunks, 0
}

// second is now as the seen sets count it: seconds from the Importer's
// epoch.
func (im *Importer) second(now time.Time) uint32 {
	return uint32(max(now.Sub(im.epoch), 0) / time.Second)
}

// sweepEvery is how often the seen sets are swept.
const sweepEvery = 10 * time.Second

// sweepSeen forgets spans placed more than DedupWindow ago, every
// sweepEvery; past maxSeen, it forgets the oldest sooner, halving the
// window until they fit. im.mu is held.
func (im *Importer) sweepSeen(now time.Time) {
	sec := im.second(now)
	if im.seen <= maxSeen && now.Sub(im.swept) < sweepEvery {
		return
	}
	im.swept = now
	window := uint32(DedupWindow / time.Second)
	for {
		from := uint32(0)
		if sec > window {
			from = sec - window
		}
		for _, rs := range im.sessions {
			im.seen -= rs.seen.sweep(from)
		}
		for _, p := range im.parked {
			im.seen -= p.seen.sweep(from)
		}
		if im.seen <= maxSeen || window == 0 {
			return
		}
		window /= 2
	}
}
