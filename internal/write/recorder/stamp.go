package recorder

import (
	"math"
	"math/rand/v2"
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
//
// An instant the format cannot hold (see Sane: before 1970, or from 2262
// on) is replaced by the clock's reading, so that no span's odd time
// gives its session an overflowed id, sorts it among the newest, or wraps
// an offset; the caller keeps the span's own time with the record
// (docs/FORMAT.md §3.5, docs/MAPPING.md §6).
func (r *Recorder) Stamp(at time.Time) (sessions.Stamp, bool) {
	if r.level.Load() == int32(sessions.LevelOff) {
		return sessions.Stamp{}, false
	}
	if at.IsZero() || !Sane(at) {
		at = r.now()
	}
	s := r.start.Load()
	if s == nil {
		s = r.startSession(at)
	}
	return sessions.Stamp{Session: s.id, Seq: r.seq.Add(1) - 1, Offset: at.Sub(s.at)}, true
}

// The instants a session id can hold: nanoseconds since 1970 that fit in
// an int64, from 1970-01-01 to 2262-04-11.
var (
	saneFrom  = time.Unix(0, 0)
	saneUntil = time.Unix(0, math.MaxInt64)
)

// Sane reports whether t is an instant a session id and a record's offset
// can hold: not before 1970 and before 2262-04-11 (nanoseconds since 1970
// in an int64). A span carrying another start (year 1000, 1600, 1969, a
// zeroed or garbled clock) is stamped at the process clock's reading
// instead.
func Sane(t time.Time) bool { return !t.Before(saneFrom) && t.Before(saneUntil) }

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
	if !Sane(at) { // a clock (WithClock) outside what an id holds
		at = clampSane(at)
	}
	// Without a set of ids (a test's fixture) the id is the start in
	// nanoseconds since 1970, as stores before ids had random bits.
	id := uint64(max(at.UnixNano(), 1))
	switch {
	case r.ids != nil && r.exact:
		// The start, or nanoseconds after it: offsets stay the span's
		// own, the same on every run.
		id = r.ids.claim(id, true)
	case r.ids != nil:
		id = r.ids.claim(id, false)
		// The session starts at the instant its id names, at most
		// IDRandomBits' worth of nanoseconds before its first stamp, so
		// that time.Unix(0, id) plus an offset (what a reader and replay
		// compute) is still each record's start to the nanosecond.
		at = at.Add(time.Duration(int64(id) - at.UnixNano()))
	}
	s := &start{id: sessions.SessionID(id), at: at}
	r.start.Store(s)
	return s
}

// clampSane returns the sane instant nearest t.
func clampSane(t time.Time) time.Time {
	if t.Before(saneFrom) {
		return saneFrom
	}
	return saneUntil.Add(-1)
}

// IDRandomBits is how many low bits of a session id are drawn at random
// (docs/FORMAT.md §4.1). The bits above are the session's start in
// nanoseconds since 1970 with these bits cleared, so ids sort sessions by
// start to within 2^24 ns (about 17 ms), have the magnitude of the plain
// nanosecond ids of stores written before, and order among them; two
// sessions starting within the same 17 ms (two processes given one
// explicit start, stores from two machines) share an id with a chance of
// 1 in 2^24 (about 6e-8) — and never within one process (IDs).
const IDRandomBits = 24

// IDs is a set of session ids already taken. Two sessions of one process
// may start at the same instant — two exporters on one provider see the
// same first span, and explicit timestamps (trace.WithTimestamp) repeat —
// and must not write over each other's records: a drawn id already taken
// is drawn again.
type IDs struct {
	mu    sync.Mutex
	taken map[uint64]struct{}
	// last is the id claimed for the latest start so far, and lastNs that
	// start: a session starting later than another of this process gets a
	// larger id, so one process's sessions order by start exactly.
	last, lastNs uint64
	// draw returns random bits; nil means math/rand/v2, seeded by the
	// runtime from the operating system's randomness, which never fails
	// (crypto/rand's Read ends the process when the system's source fails,
	// and the library must never take its host down).
	draw func() uint64
}

// ProcessIDs is the set of the ids every exporter of this process took.
var ProcessIDs IDs

// claim returns a new id for a session starting ns nanoseconds after 1970:
// ns with its IDRandomBits low bits replaced by random ones, and at most
// ns, so the session's start moves earlier, never after its first record
// (but for the first 17 ms of 1970).
// It is never 0 and never one this set gave before, and a later start
// than any this set saw gets a larger id than any it gave. With exact, it
// is ns itself, or the next free nanosecond after it (Config.ExactIDs).
func (ids *IDs) claim(ns uint64, exact bool) uint64 {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.taken == nil {
		ids.taken = make(map[uint64]struct{})
	}
	if exact {
		// The start itself, or the next free nanosecond after it.
		for {
			if _, ok := ids.taken[ns]; !ok && ns != 0 {
				ids.taken[ns] = struct{}{}
				return ns
			}
			ns++
		}
	}
	draw := ids.draw
	if draw == nil {
		draw = rand.Uint64
	}
	const low = 1<<IDRandomBits - 1
	// The first 17 ms of 1970 (a clock clamped there) have no earlier
	// id to take: the session starts in the 17 ms after.
	ns = max(ns, low+1)
	for {
		id := ns&^low | draw()&low
		if id > ns {
			id -= low + 1
		}
		if ns > ids.lastNs && id <= ids.last {
			// A later start than the last one claimed: an id between
			// that one's and this start, or just past the start when
			// there is no room below it.
			if ids.last < ns {
				id = ids.last + 1 + draw()%(ns-ids.last)
			} else {
				id = ids.last + 1
			}
		}
		if _, ok := ids.taken[id]; ok || id == 0 {
			continue
		}
		ids.taken[id] = struct{}{}
		if ns >= ids.lastNs {
			ids.last, ids.lastNs = max(ids.last, id), ns
		}
		return id
	}
}
