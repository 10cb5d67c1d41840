package explain

import (
	"slices"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// InstanceKeys are the Resource attributes that name the instance of a
// service a session ran as: one with a cache of its own. Two sessions
// whose values of one of them differ (one of them without it included)
// ran on two instances, and neither could find the other's work. The
// Resource of a remote session (through the Collector, or pulled from a
// backend) is its sender's, so a fleet read as one store tells its
// instances apart.
var InstanceKeys = []string{"service.instance.id", "host.name"}

// instanceOf returns what names the instance a session ran as: the values
// of its InstanceKeys, "" for each it lacks. A session without a row (nil)
// names none, as a row without them.
func instanceOf(s *sessions.Session) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for _, k := range InstanceKeys {
		if v, ok := s.Resource.Get(k); ok {
			b.WriteString(v.String())
			b.WriteByte(1) // present, and where the value ends
		}
		b.WriteByte(0)
	}
	return b.String()
}

// instanceDifferences returns the InstanceKeys whose values differ
// between the rows of two sessions, in key order.
func instanceDifferences(before, after *sessions.Session) []Difference {
	var b, a sessions.Attrs
	if before != nil {
		b = before.Resource
	}
	if after != nil {
		a = after.Resource
	}
	keys := map[string]bool{}
	instance := func(k string) bool { return slices.Contains(InstanceKeys, k) }
	addKeys(keys, b, instance)
	addKeys(keys, a, instance)
	return differences(keys, b, a)
}

// instances numbers the instances sessions ran as, so that a key's
// history holds a word for each rather than its name.
type instances map[string]int32

func (in *instances) id(name string) int32 {
	if *in == nil {
		*in = instances{}
	}
	id, ok := (*in)[name]
	if !ok {
		id = int32(len(*in))
		(*in)[name] = id
	}
	return id
}

// latest are, in one place (an instance, or the whole store), the latest
// record of a key and the latest that did the work: what the caller keeps
// of them (Why the records, Rework nothing).
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

// history is what came before a record of one key, in stamp order: the
// latest records of the key in the store and on each instance, and the
// work of it still running in the session being read. It is the one rule
// by which Why and Rework tell why work was done (judge). Rework keeps
// nothing of the records: a history is then a few words, and a word or
// two per record of the key running at once.
type history[T any] struct {
	store latest[T]
	// The first instance to record the key is held here; the others,
	// rarer, in a map made when one comes.
	firstInst int32
	first     latest[T]
	others    map[int32]*latest[T]
	// session is the session the running work belongs to.
	session sessions.SessionID
	running []running[T]
}

// judgement is why a record of a key was done, as far as what came before
// it tells (history.judge).
type judgement[T any] struct {
	// cause is Observed, New, NewHere or Raced; "" for work done again on
	// its instance, which Why tells apart by comparing the records
	// (Inputs, Environment, Forgotten) and Rework counts as redone.
	cause Cause
	// prev is the record compared with, when hasPrev.
	prev    T
	hasPrev bool
	// atOnce is, for Raced, how many records of the key were running at
	// this one's start, this one included.
	atOnce int
}

// on returns the latest records of the key on instance inst, nil when
// it has none (and make is false).
func (h *history[T]) on(inst int32, make bool) *latest[T] {
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

// judge says why a record of the key was done, given in stamp order on
// instance inst, started at offset on its session's clock, with what it
// did (v), and adds it (val) to the history.
//
// A hit is Observed: the cache answered. Work (a miss, work done, or a
// record that does not say) is New when the store holds no earlier record
// of the key; NewHere when no earlier one is of this instance (another
// instance did the work, with a cache of its own); Raced when work of the
// key in the same session was still running when it started (two
// requests computed it at once, neither waiting for the other); and
// otherwise done again on its instance, compared with the latest record of
// the key there that did the work (else the latest there).
func (h *history[T]) judge(inst int32, session sessions.SessionID, offset, wall time.Duration, v Verdict, val T) judgement[T] {
	if session != h.session {
		clear(h.running)
		h.session, h.running = session, h.running[:0]
	}
	here := h.on(inst, false)
	var j judgement[T]
	switch {
	case v == Hit:
		j.cause = Observed
		if here != nil {
			j.prev, j.hasPrev = here.prev()
		} else {
			j.prev, j.hasPrev = h.store.prev()
		}
	case !h.store.hasAny:
		j.cause = New
	case here == nil:
		j.cause = NewHere
		j.prev, j.hasPrev = h.store.prev()
	default:
		j.prev, j.hasPrev = here.prev()
		// Work still running at this one's start, in this session: what
		// ended before is let go, as records come in the order they
		// started.
		kept := h.running[:0]
		for _, r := range h.running {
			if r.end > offset {
				kept = append(kept, r)
			}
		}
		clear(h.running[len(kept):])
		h.running = kept
		if n := len(h.running); n > 0 {
			j.cause, j.prev, j.hasPrev, j.atOnce = Raced, h.running[n-1].val, true, n+1
		}
	}

	here = h.on(inst, true)
	here.any, here.hasAny = val, true
	h.store.any, h.store.hasAny = val, true
	if v.IsWork() {
		here.work, here.hasWork = val, true
		h.store.work, h.store.hasWork = val, true
		h.running = append(h.running, running[T]{val, addSat(offset, max(wall, 0))})
	}
	return j
}
