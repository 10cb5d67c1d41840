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
// (liveTrace), not here: the set is a map of every span of the window,
// whose lookups miss the cache, and a span placed in the request that
// brought it would otherwise be written to it twice.

// maxSeen bounds the spans an Importer remembers over every session:
// about 60 MiB of memory at most. Past it the window shrinks until they
// fit, oldest first: a gateway taking 10,000 spans a second remembers the
// last 100 seconds of them.
const maxSeen = 1 << 20

// seenCost is what one remembered span costs, in bytes of memory.
const seenCost = 56

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

// seenSet is the spans a session remembers.
type seenSet struct {
	m map[spanRef]seen
}

func (s *seenSet) state(k spanRef) spanState { return s.m[k].state }

// set sets the state of k, and reports whether k is new to the set.
func (s *seenSet) set(k spanRef, st spanState, at uint32) bool {
	if s.m == nil {
		s.m = make(map[spanRef]seen)
	}
	n := len(s.m)
	s.m[k] = seen{st, at} // one lookup: the set grew if k is new
	return len(s.m) > n
}

func (s *seenSet) len() int { return len(s.m) }

// sweep forgets the spans remembered since before the second from, and
// returns how many it forgot. (A waiting span that was wanted keeps that
// in its pendingSpan.)
func (s *seenSet) sweep(from uint32) int {
	n := 0
	for k, v := range s.m {
		if v.at < from {
			delete(s.m, k)
			n++
		}
	}
	if len(s.m) == 0 {
		s.m = nil // a map keeps its size once grown: give it back
	}
	return n
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
