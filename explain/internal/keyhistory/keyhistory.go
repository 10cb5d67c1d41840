// Package keyhistory is the one rule by which package explain tells why a
// record of a key was done: Why tells it record by record, Rework counts
// it. A History holds what came before a record of one key: the latest
// records of the key in the store and on each instance of the service (a
// cache of its own), and the work of the key still running in the session
// being read; Judge says what the next record is.
//
// Records come session by session, and within a session in the order
// they started (their offset, then their seq), not in the order they were
// stamped: a gateway stamps the spans of concurrent requests in the order
// their traces reached it, which need not be the order they started, and
// the answer must not depend on the path a record took. Of two records of
// a key running at once, the one that started later is the one that
// raced.
//
// It knows records only as a caller gives them (a value of T: Why keeps
// the records, to compare them; Rework nothing, so that a key it counts
// costs a few words), and instances as numbers the caller gives them.
package keyhistory

import (
	"math"
	"time"
)

// Cause is why a record of a key was done, as far as what came before it
// tells.
type Cause uint8

// The causes, in the order Judge tells them apart.
const (
	// Again is work done again on its instance, which had done it
	// before: explain tells why by comparing the records (other inputs,
	// another environment, or forgotten).
	Again Cause = iota
	// Hit is a record that found the work done.
	Hit
	// New is the first record of the key in the store.
	New
	// NewHere is the first record of the key on its instance, another
	// instance having done the work before, with a cache of its own.
	NewHere
	// Raced is work done while a record of the key in the same session
	// was still doing it: requests that computed the key at once.
	Raced
)

// Judgement is why a record was done (Cause), the record it is compared
// with (Prev, when HasPrev), and for Raced how many records of the key
// were running when it started, itself included (AtOnce).
type Judgement[T any] struct {
	Cause   Cause
	Prev    T
	HasPrev bool
	AtOnce  int
}

// latest are, in one place (an instance, or the whole store), the latest
// record of a key and the latest that did the work.
type latest[T any] struct {
	any, work       T
	hasAny, hasWork bool
}

// prev is the record a later one is compared with: the latest that did
// the work, else the latest; false when there is none.
func (l *latest[T]) prev() (T, bool) {
	if l.hasWork {
		return l.work, true
	}
	return l.any, l.hasAny
}

// running is work of a key in the session being read, and when it ended
// on the session's clock.
type running[T any] struct {
	val T
	end time.Duration
}

// History is what came before a record of one key. The zero History is
// ready to use.
type History[T any] struct {
	store latest[T]
	// The first instance to record the key is held here; the others,
	// rarer, in a map made when one comes.
	firstInst int32
	first     latest[T]
	others    map[int32]*latest[T]
	// session is the session the running work belongs to.
	session uint64
	running []running[T]
	// hits are the session's hits not yet known to have answered before
	// the records that come next started: a hit still running when a
	// miss starts may have found the miss's own work (a request waiting
	// on a lock the computing one holds), so it is not evidence that the
	// cache held the key until it has ended.
	hits []pending[T]
}

// pending is a hit of the session being read, and the instance it ran
// on and when it ended on the session's clock.
type pending[T any] struct {
	val  T
	inst int32
	end  time.Duration
}

// on returns the latest records of the key on instance inst, nil when
// it has none (and make is false).
func (h *History[T]) on(inst int32, make bool) *latest[T] {
	switch {
	case !h.store.hasAny:
		if !make {
			return nil
		}
		h.firstInst = inst
		return &h.first
	case inst == h.firstInst:
		return &h.first
	}
	if l := h.others[inst]; l != nil || !make {
		return l
	}
	if h.others == nil {
		h.others = map[int32]*latest[T]{}
	}
	l := new(latest[T])
	h.others[inst] = l
	return l
}

// settle adds to the history the session's hits that ended by at, in
// the order they started; the rest stay pending.
func (h *History[T]) settle(at time.Duration) {
	kept := h.hits[:0]
	for _, p := range h.hits {
		if p.end > at {
			kept = append(kept, p)
			continue
		}
		l := h.on(p.inst, true)
		l.any, l.hasAny = p.val, true
		h.store.any, h.store.hasAny = p.val, true
	}
	clear(h.hits[len(kept):])
	h.hits = kept
}

// Judge says why a record of the key was done, given session by session
// and within a session in the order records started (see the package
// doc): on instance inst, in session, started at offset on the session's clock,
// running for wall, a hit or not; and adds it (val) to the history.
//
// A hit is Hit: the cache answered, compared with the latest work of its
// instance. Work (a miss, work done, or a record that does not say) is New
// when the store holds no earlier record of the key; NewHere when no
// earlier one is of this instance (compared with the store's latest
// work); Raced when work of the key in the same session was still running
// when it started (compared with the one of them that started last); and
// otherwise Again, compared with the latest record of the key on its
// instance that did the work (else the latest there). A hit of the same
// session counts as an earlier record only once it has ended: one still
// running when work of its key starts may have waited for that work (a
// request blocked on the lock of the one computing) and found it, so it
// does not show that the cache held the key before.
func (h *History[T]) Judge(inst int32, session uint64, offset, wall time.Duration, hit bool, val T) Judgement[T] {
	if session != h.session {
		h.settle(math.MaxInt64)
		clear(h.running)
		h.session, h.running = session, h.running[:0]
	} else {
		h.settle(offset)
	}
	here := h.on(inst, false)
	var j Judgement[T]
	switch {
	case hit:
		j.Cause = Hit
		if here != nil {
			j.Prev, j.HasPrev = here.prev()
		} else {
			j.Prev, j.HasPrev = h.store.prev()
		}
	case !h.store.hasAny:
		j.Cause = New
	case here == nil:
		j.Cause = NewHere
		j.Prev, j.HasPrev = h.store.prev()
	default:
		j.Cause = Again
		j.Prev, j.HasPrev = here.prev()
		// Work still running at this one's start, in this session: what
		// ended before is let go, as records come in the order they
		// started (the caller's promise; a record given out of that
		// order would find work that started after it "running").
		kept := h.running[:0]
		for _, r := range h.running {
			if r.end > offset {
				kept = append(kept, r)
			}
		}
		clear(h.running[len(kept):])
		h.running = kept
		if n := len(h.running); n > 0 {
			j.Cause, j.Prev, j.HasPrev, j.AtOnce = Raced, h.running[n-1].val, true, n+1
		}
	}

	end := offset + max(wall, 0)
	if end < offset { // past the clock's end
		end = math.MaxInt64
	}
	if hit {
		h.hits = append(h.hits, pending[T]{val, inst, end})
		return j
	}
	here = h.on(inst, true)
	here.any, here.hasAny, here.work, here.hasWork = val, true, val, true
	h.store.any, h.store.hasAny, h.store.work, h.store.hasWork = val, true, val, true
	h.running = append(h.running, running[T]{val, end})
	return j
}
