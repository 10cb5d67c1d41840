package recorder

import (
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// What an Importer needs of a Recorder beside the SpanProcessor's path:
// a gateway holds the sessions of many senders at once, bounds what they
// all hold by one budget, lets a quiet one go and resumes it later under
// the same id (Config.Resume), and writes entries of its own beside the
// records.

// Started returns the session's id and start, and false before its first
// stamp.
func (r *Recorder) Started() (sessions.SessionID, time.Time, bool) {
	s := r.start.Load()
	if s == nil {
		return 0, time.Time{}, false
	}
	return s.id, s.at, true
}

// NextSeq returns the seq the next stamp will take: above every seq
// stamped so far.
func (r *Recorder) NextSeq() uint64 { return r.seq.Load() }

// QueueEntry queues an entry that is not a record (an Importer's own
// bookkeeping) to be written with the next Flush, after the records
// queued before it and in the same batch: it is durable when they are.
// Its key and value are copied. It is not counted among records, and a
// closed Recorder drops it.
func (r *Recorder) QueueEntry(e sessions.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.takeSpare()
	start := len(r.arena)
	r.arena = append(r.arena, e.Key...)
	mid := len(r.arena)
	r.arena = append(r.arena, e.Value...)
	end := len(r.arena)
	r.queue(sessions.Entry{Key: r.arena[start:mid:mid], Value: r.arena[mid:end:end]})
}

// QueueRow queues the session row, as it is now, to be written with the
// next Flush, for a kept session: an Importer that resumes a session a
// previous process kept hands its row on again, for whoever reads what
// it hands on (importer.Config.Forward) to know the session.
func (r *Recorder) QueueRow() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.kept {
		return
	}
	r.takeSpare()
	r.queueSession()
}

// HeldMemory returns the bytes of memory the session's held records take
// (records held until the session is kept, and traces held until they
// are decided): what an Importer counts against its one bound over every
// sender.
func (r *Recorder) HeldMemory() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.held.Size() + r.traces.counted
	return n
}

// DropHeld lets held records go, oldest first — records held until the
// session is kept, then traces held until they are decided, oldest
// first — until what is held counts at most target bytes, as the pending
// budget would if it were target. What goes is counted in Stats.Evicted
// (and Stats.TracesEvicted), as the budget's evictions are. It returns
// how many records went.
func (r *Recorder) DropHeld(target int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	target = max(target, 0)
	before := r.stats.Evicted
	if over := r.held.Counted() + r.traces.counted - target; over > 0 {
		n := r.held.Trim(max(r.held.Counted()-over, 0))
		r.stats.Evicted += int64(n)
	}
	budget := r.budget
	r.budget = target
	r.evictTraces()
	r.budget = budget
	return int(r.stats.Evicted - before)
}

// HeldCounted returns what the held records count against the pending
// budget (the unit DropHeld takes).
func (r *Recorder) HeldCounted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held.Counted() + r.traces.counted
}

// KeepNow keeps the session (under KeepByTrace, trace t, and the session
// with it) before the Changed record that keeps it is routed: an
// Importer that holds a changed span until its parent arrives keeps the
// session as soon as the span arrives, so that the span is written ahead
// (and the records held before it written) before the sender is told it
// is stored. The record itself keeps nothing more when it comes.
func (r *Recorder) KeepNow(t Trace) {
	r.mu.Lock()
	wasKept := r.kept
	if !r.closed {
		switch {
		case r.keepBy == KeepByTrace && t != (Trace{}):
			if d, ok := r.traces.decided[t]; !ok || d.d != decidedKept {
				r.keepTrace(t)
			}
		case !r.kept:
			r.keepSession()
		}
	}
	keptNow := !wasKept && r.kept
	r.mu.Unlock()
	if keptNow && r.onKeep != nil {
		r.onKeep()
	}
}

// Begin starts the session at the instant at, unless it has started: an
// Importer starts a sender's session at the earliest start its first
// batch gives, whichever of its spans is stamped first. It stamps nothing.
func (r *Recorder) Begin(at time.Time) {
	if r.start.Load() == nil && Sane(at) {
		r.startSession(at)
	}
}
