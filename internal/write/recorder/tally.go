package recorder

import (
	"sync/atomic"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// DefaultTallyEvery is how often at most a kept session's tally is
// rewritten while it runs (Config.TallyEvery): what a crash loses of it.
const DefaultTallyEvery = 30 * time.Second

// The tally (docs/FORMAT.md §3.6) counts every record the Recorder lets
// go, where it decides to: held records the pending budget pushes out
// (the hold's OnDrop, so DropHeld's trims too), traces dropped after
// their grace, evicted, or still held at Close, and late records of a
// trace let go; and what its caller let go before it (TallyRecord,
// TallyMark, TallyMarks). It is written only once the session is kept:
// with the session's first batch, at a Flush when it changed and
// TallyEvery has passed since it was last queued, and at Close.

// lastPart is the last tally part a Recorder of this process took.
var lastPart atomic.Uint64

// newPart returns a tally part no other Recorder of the process has: the
// time now in Unix nanoseconds, bumped past the last one taken. A later
// process (an Importer restarted) resuming the session takes a later
// time, so a part is never written over by another writer.
func newPart() uint64 {
	p := uint64(time.Now().UnixNano())
	for {
		last := lastPart.Load()
		if p <= last {
			p = last + 1
		}
		if lastPart.CompareAndSwap(last, p) {
			return p
		}
	}
}

// tallyHeld counts a held record the hold lets go (its payload as
// holdRecord makes it); r.mu is held.
func (r *Recorder) tallyHeld(_ struct{}, p []byte) {
	if len(p) < 9 || len(p) < 9+int(p[8])+tally.HintSize {
		return
	}
	_, kind, hint, value := heldParts(p)
	r.tally.AddHinted(kind, value, hint)
}

// tallyTrace counts the records of a held trace let go; r.mu is held.
func (r *Recorder) tallyTrace(h *heldTrace) {
	for p := h.buf; len(p) > 0; {
		var kind, value []byte
		var hint tally.Hint
		_, kind, hint, value, p = traceEntry(p)
		r.tally.AddHinted(kind, value, hint)
	}
}

// TallyRecord counts one record of kind let go before it reached the
// Recorder, from its value as AppendEncoded encodes it (any stamp), as a
// held record pushed out is counted: an Importer's bound lets a span go
// while it waits for its parent. An invalid kind is counted nowhere, as
// Record would refuse it.
func (r *Recorder) TallyRecord(kind string, value []byte) {
	k, err := keys.CheckKind(kind)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && !r.closed {
		r.tally.AddString(k, value)
	}
}

// TallyMarks counts implicit marks let go, summed by name elsewhere (the
// exporter sums them on the goroutines that end them): each of e's
// records is a mark named name.
func (r *Recorder) TallyMarks(name string, e tallies.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.tally.Merge(sessions.MarksKind, name, e)
	}
}

// TallyMark counts one implicit mark let go, named name, that ran for d.
func (r *Recorder) TallyMark(name string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.tally.AddMark(name, d)
	}
}

// TallyDue reports whether a Flush would write the tally now, though no
// record waits: the caller flushes a kept session that only lets go.
func (r *Recorder) TallyDue() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tallyDue(false)
}

// QueueTally queues the tally, for the next Flush, if the session is
// kept and it changed since it was last queued (or was never queued),
// and reports whether it did: an Importer lets a quiet session go only
// once what it let go is written, so that Close, under its lock, has
// nothing to write.
func (r *Recorder) QueueTally() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.tallyDue(true) {
		return false
	}
	r.queueTallyDue(true)
	return true
}

// tallyDue reports whether the tally is to be queued now; r.mu is held.
func (r *Recorder) tallyDue(final bool) bool {
	switch {
	case !r.kept || r.closed && !final:
		return false
	case !r.tallyQueued:
		return true
	}
	return r.tally.Changed() && (final || r.now().Sub(r.tallyAt) >= r.tallyEvery)
}

// queueTallyDue queues the tally when a kept session has not queued it
// yet, or when it changed and TallyEvery has passed since it was queued
// (always, when final); r.mu is held.
func (r *Recorder) queueTallyDue(final bool) {
	if !r.tallyDue(final) {
		return
	}
	s := r.start.Load()
	if s == nil {
		return
	}
	v, err := r.tally.Tally(s.id, r.tallyPart).MarshalCBOR()
	if err != nil {
		r.stats.WriteErrors++ // numbers and strings always encode
		return
	}
	r.queue(sessions.Entry{Key: keys.Tally(uint64(s.id), r.tallyPart), Value: v})
	r.tallyAt, r.tallyQueued = r.now(), true
}

// newTally readies the Recorder's tally; New calls it.
func (r *Recorder) newTally(every time.Duration) {
	r.tally = tally.New()
	r.tallyPart = newPart()
	r.tallyEvery = every
	if every <= 0 {
		r.tallyEvery = DefaultTallyEvery
	}
	r.held.OnDrop(r.tallyHeld)
}
