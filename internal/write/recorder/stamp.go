package recorder

import (
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

type start struct {
	id sessions.SessionID
	at time.Time // carries a monotonic reading with the real clock
}

// Stamp places a record that starts at the instant at (the zero time means
// now) in the session, starting the session if this is its first stamp. It
// returns false at LevelOff, where nothing is stamped. Seqs are unique and
// increase in the order Stamp is called.
//
// The session starts at its first stamp's instant, not when Stamp reads a
// clock: a span's start is taken before the processor sees it, and a span
// may carry an explicit earlier start (trace.WithTimestamp), so a clock
// read here would fall after it and push the span onto the next one. (If
// the clock reads earlier than that instant — a stamp for an instant still
// to come, as a test's fixture gives — the session starts at the clock's
// reading: it has begun by then.)
// Offsets are measured from that start, on the monotonic clock when both
// instants carry a reading. An instant earlier than the session's start (a
// later stamp whose span says it began before the first one did) gives a
// negative offset: the session's id and the offsets already handed out
// cannot move, and clamping it to 0 would draw the record overlapping
// records it did not overlap.
func (r *Recorder) Stamp(at time.Time) (sessions.Stamp, bool) {
	if r.level.Load() == int32(sessions.LevelOff) {
		return sessions.Stamp{}, false
	}
	if at.IsZero() {
		at = r.now()
	}
	s := r.start.Load()
	if s == nil {
		s = r.startSession(at)
	}
	return sessions.Stamp{Session: s.id, Seq: r.seq.Add(1) - 1, Offset: at.Sub(s.at)}, true
}

// startSession starts the session at the instant at, unless a concurrent
// first stamp started it already.
func (r *Recorder) startSession(at time.Time) *start {
	r.begin.Lock()
	defer r.begin.Unlock()
	if s := r.start.Load(); s != nil {
		return s
	}
	if now := r.now(); now.Before(at) {
		at = now
	}
	// Nanoseconds since the epoch: unique enough between processes whose
	// starts come from their clocks, and they sort sessions by start
	// without a lookup.
	id := uint64(max(at.UnixNano(), 1))
	if r.ids != nil {
		id = r.ids.claim(id)
	}
	s := &start{id: sessions.SessionID(id), at: at}
	r.start.Store(s)
	return s
}

// IDs is a set of session ids already taken. Two sessions of one process
// may start at the same instant — two exporters on one provider see the
// same first span, and explicit timestamps (trace.WithTimestamp) repeat —
// and would then write over each other's records. A session whose start is
// taken takes the next free nanosecond instead: its id stays within
// nanoseconds of its start, and still sorts it among the others.
type IDs struct {
	mu    sync.Mutex
	taken map[uint64]struct{}
}

// ProcessIDs is the set of the ids every exporter of this process took.
var ProcessIDs IDs

// claim takes id, or the next free one after it, and returns it.
func (ids *IDs) claim(id uint64) uint64 {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.taken == nil {
		ids.taken = make(map[uint64]struct{})
	}
	for {
		if _, ok := ids.taken[id]; !ok {
			break
		}
		id++
	}
	ids.taken[id] = struct{}{}
	return id
}
