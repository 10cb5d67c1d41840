package recorder

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
)

// KeepBy is the unit the retention rules keep: the whole session from its
// first change on (the seed's rule), or each trace on its own.
type KeepBy uint8

// The retention units.
const (
	// KeepBySession keeps the session at its first Changed record, with
	// what it held, and from then on writes every record: a build, which
	// does one thing and whose every step explains the change.
	KeepBySession KeepBy = iota
	// KeepByTrace decides each trace on its own: its records are held
	// until its local root ends (and TraceGrace after it), kept if one of
	// them changed something and dropped otherwise; the session is kept
	// with its first kept trace. A server, whose session never ends and
	// whose requests are mostly cache hits, keeps the requests that did
	// the work and none of the thousand that found it done.
	KeepByTrace
)

// Trace identifies a trace: its OpenTelemetry trace id. The zero Trace is
// no trace; records given without one follow the session rule.
type Trace [16]byte

// TraceGrace is how long a trace whose local root has ended stays held
// for children that end after it — spans a handler started and did not
// wait for (a goroutine finishing a cache write after the response went
// out). The clock starts when the root's end is routed, and spans are
// routed in the order they ended, every 50 ms or sooner: a second takes
// in children ending up to about 900 ms after their root even on a loaded
// machine, while a warm server holds a second's worth of requests at
// most (at 1,000 requests a second of two small records each, about
// 600 KB of the 1 MiB budget). A trace that changes something is kept at
// its first Changed record and waits for nothing: the grace delays only
// the decision to drop.
const TraceGrace = time.Second

// What a trace's decision is remembered for: late spans of a kept trace
// are written and those of a dropped one let go, as long as the decision
// is remembered — at most decisionTTL after it was made and among the
// newest maxDecisions decisions, whichever forgets first. A span that
// ends this late after its root is rare (TraceGrace covers the usual
// ones); the bound keeps the memory a warm server spends on decisions to
// about 200 KB however long it runs.
const (
	decisionTTL  = time.Minute
	maxDecisions = 4096
)

// traceOverhead is what a held trace counts against the budget besides
// its records: its entry in the table and the queues, so that a flood of
// traces of one tiny record each is bounded by the budget too.
const traceOverhead = 96

// decision is what became of a trace.
type decision uint8

const (
	decidedKept    decision = iota + 1 // a record changed something: written
	decidedDropped                     // its root ended and the grace passed with no change
	decidedEvicted                     // the budget pushed it out before a decision
)

// heldTrace is a trace not decided yet: its records as holdInTrace lays
// them out in buf (seq, kind's length, kind, the value's length, the
// tally hint, the value), for traceEntry to read back.
type heldTrace struct {
	buf     []byte
	n       int // records held
	counted int // what they count against the budget, traceOverhead included
	ended   bool
	endedAt time.Time
	gen     uint64 // tells this hold of the trace from an earlier one in the queues
}

// traceRef is a trace's place in a queue; it is stale once the trace is
// decided or held anew (gen).
type traceRef struct {
	t   Trace
	gen uint64
}

// remembered is a decision and when it was made.
type remembered struct {
	d   decision
	at  time.Time
	gen uint64
}

// traces is what KeepByTrace keeps of undecided traces and decisions. It
// is owned by the Recorder and guarded by its mu.
type traces struct {
	held    map[Trace]*heldTrace
	counted int        // what every held trace counts against the budget
	records int        // records held in all of them
	open    []traceRef // held traces whose root has not ended, oldest first
	ended   []traceRef // held traces whose root has ended, in that order
	decided map[Trace]remembered
	memory  []traceRef // decisions, oldest first (gen matches remembered.gen)
	gen     uint64
	spare   []*heldTrace // emptied holds, their buffers kept for the next
}

// maxSpareTraces and maxSpareTraceBuf bound the emptied holds kept for
// reuse, so that a server holding a request's records allocates nothing
// for it once warm, and a burst's large buffers go.
const (
	maxSpareTraces   = 64
	maxSpareTraceBuf = 16 << 10
)

// routeTrace applies the rules of KeepByTrace to a record of trace t
// (value nil and err set for a record too large to store); r.mu is held.
func (r *Recorder) routeTrace(t Trace, k string, effect sessions.Effect, st sessions.Stamp, value []byte, hint tally.Hint, err error, name string) error {
	tr := &r.traces
	if d, ok := tr.decided[t]; ok {
		switch {
		case d.d == decidedKept:
		case effect == sessions.Changed:
			// A late change to a trace already let go: what it changed is
			// kept, and so is the rest of the trace from here on (what was
			// dropped is gone).
			// It counts again, as seen and kept, so that kept, dropped
			// and evicted still add up to the traces seen.
			r.decide(t, decidedKept)
			r.stats.TracesSeen++
			r.stats.TracesKept++
		default:
			if d.d == decidedEvicted {
				r.stats.Evicted++
			}
			if err == nil {
				r.tally.AddString(k, value) // a late record of a trace let go
			}
			return tooLargeErr(k, err, name)
		}
		if !r.kept {
			r.keepSession()
		}
		if err != nil {
			r.stats.TooLarge++
			return tooLargeErr(k, err, name)
		}
		r.queueRecord(k, uint64(st.Session), st.Seq, value)
		return nil
	}
	if err != nil {
		r.stats.TooLarge++
		if effect == sessions.Changed {
			r.keepTrace(t)
		}
		return tooLargeErr(k, err, name)
	}
	if effect == sessions.Changed {
		r.keepTrace(t)
		r.queueRecord(k, uint64(st.Session), st.Seq, value)
		return nil
	}
	r.holdInTrace(t, k, st, value, hint)
	return nil
}

// tooLargeErr is the error of a record dropped because no store holds it,
// or nil when err is nil.
func tooLargeErr(k string, err error, name string) error {
	if err == nil {
		return nil
	}
	return tooLarge(k, name, err)
}

// holdInTrace holds a record of trace t, counted as the session's held
// records count (keys.Size + value), then evicts held traces while the
// budget is passed. The trace's buffer holds, for each record, its seq,
// its kind's length and kind, its value's length, its tally hint, then
// its value (traceEntry reads them back): 19 bytes and the kind besides
// the value, within the 28 and the kind its key counts.
func (r *Recorder) holdInTrace(t Trace, k string, st sessions.Stamp, value []byte, hint tally.Hint) {
	h := r.holdTrace(t)
	if h.n == 0 {
		r.stats.TracesSeen++ // its first record: the trace is seen
	}
	var pre [13]byte
	binary.BigEndian.PutUint64(pre[:8], st.Seq)
	pre[8] = byte(len(k)) // at most keys.MaxKindLen, 128
	h.buf = append(h.buf, pre[:9]...)
	h.buf = append(h.buf, k...)
	binary.BigEndian.PutUint32(pre[9:], uint32(len(value)))
	h.buf = append(h.buf, pre[9:13]...)
	h.buf = tally.AppendHint(h.buf, hint)
	h.buf = append(h.buf, value...)
	n := keys.Size(k) + len(value)
	h.n++
	h.counted += n
	r.traces.records++
	r.traces.counted += n
	r.evictTraces()
}

// holdTrace returns the hold of trace t, starting one if it has none.
func (r *Recorder) holdTrace(t Trace) *heldTrace {
	tr := &r.traces
	if h := tr.held[t]; h != nil {
		return h
	}
	if tr.held == nil {
		tr.held = make(map[Trace]*heldTrace)
	}
	var h *heldTrace
	if n := len(tr.spare); n > 0 {
		h, tr.spare = tr.spare[n-1], tr.spare[:n-1]
	} else {
		h = new(heldTrace)
	}
	tr.gen++
	h.gen, h.counted = tr.gen, traceOverhead
	tr.counted += traceOverhead
	tr.held[t] = h
	tr.open = append(tr.compact(tr.open, false), traceRef{t, h.gen})
	return h
}

// EndTrace says the local root span of trace t has ended: the trace is
// decided once TraceGrace has passed (DecideTraces), unless a record
// keeps it first. Under KeepBySession, or for a trace decided already, it
// does nothing.
func (r *Recorder) EndTrace(t Trace) {
	if r.keepBy != KeepByTrace || t == (Trace{}) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if _, ok := r.traces.decided[t]; ok {
		return
	}
	// A root that ends with nothing held is held empty for the grace,
	// so that a child ending after it is decided with it.
	h := r.holdTrace(t)
	if h.ended {
		return // another local root of the trace ended first
	}
	h.ended, h.endedAt = true, r.now()
	r.traces.ended = append(r.traces.compact(r.traces.ended, true), traceRef{t, h.gen})
	r.evictTraces()
}

// DecideTraces drops the traces whose root ended TraceGrace ago or more
// with nothing changed, forgets decisions past their time, and reports
// whether traces still wait for their grace to pass: the caller calls it
// again within a grace while they do.
func (r *Recorder) DecideTraces() (waiting bool) {
	if r.keepBy != KeepByTrace {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	tr := &r.traces
	i := 0
	for ; i < len(tr.ended); i++ {
		ref := tr.ended[i]
		h := tr.held[ref.t]
		if h == nil || h.gen != ref.gen {
			continue // decided, or evicted, already
		}
		if now.Sub(h.endedAt) < TraceGrace {
			break
		}
		if h.n > 0 {
			r.stats.TracesDropped++
			r.tallyTrace(h)
		}
		r.release(ref.t, h)
		r.decide(ref.t, decidedDropped)
	}
	tr.ended = shift(tr.ended, i)
	r.forget(now)
	return len(tr.ended) > 0
}

// dropHeldTraces drops every trace held, undecided, at Close: the grace
// of those whose root has ended is cut short, and those whose root has
// not ended will never end here. None changed anything (a change keeps its
// trace at once), so each is dropped, and counted, as its grace would
// have dropped it: kept, dropped and evicted add up to the traces seen.
// r.mu is held.
func (r *Recorder) dropHeldTraces() {
	for _, h := range r.traces.held {
		if h.n > 0 {
			r.stats.TracesDropped++
			r.tallyTrace(h)
		}
	}
}

// traceEntry reads the first record holdInTrace put in a trace's buffer
// p, and returns it and the rest of p.
func traceEntry(p []byte) (seq uint64, kind []byte, hint tally.Hint, value, rest []byte) {
	n := int(p[8])
	kind = p[9 : 9+n]
	vlen := int(binary.BigEndian.Uint32(p[9+n:]))
	hint = tally.ReadHint(p[13+n:])
	at := 13 + n + tally.HintSize
	return binary.BigEndian.Uint64(p), kind, hint, p[at : at+vlen], p[at+vlen:]
}

// keepTrace keeps trace t: the session, if this is its first kept trace
// (with the records it held outside any trace), then the trace's held
// records, oldest first. r.mu is held.
func (r *Recorder) keepTrace(t Trace) {
	if !r.kept {
		r.keepSession()
	}
	r.stats.TracesKept++
	h := r.traces.held[t]
	if h == nil || h.n == 0 {
		r.stats.TracesSeen++ // kept at its first record
	}
	if h != nil {
		id := uint64(r.start.Load().id)
		for p := h.buf; len(p) > 0; {
			var seq uint64
			var kind, value []byte
			seq, kind, _, value, p = traceEntry(p)
			r.queueRecord(string(kind), id, seq, value) // once, at the keep
		}
		r.release(t, h)
	}
	r.decide(t, decidedKept)
}

// evictTraces lets held traces go, whole, while they and the session's
// held records count more than the budget: first those whose root has
// ended (waiting out their grace, nearly always to be dropped), oldest
// first, then those still open, oldest first. A trace that alone counts
// more than the budget goes too: what is held always fits.
func (r *Recorder) evictTraces() {
	tr := &r.traces
	for tr.counted+r.held.Counted() > r.budget {
		ref, ok := tr.pop(&tr.ended, true)
		if !ok {
			ref, ok = tr.pop(&tr.open, false)
		}
		if !ok {
			return
		}
		h := tr.held[ref.t]
		r.stats.Evicted += int64(h.n)
		if h.n > 0 { // a root that ended with nothing held is no trace seen
			r.stats.TracesEvicted++
			r.tallyTrace(h)
		}
		r.release(ref.t, h)
		r.decide(ref.t, decidedEvicted)
	}
}

// pop takes the oldest live trace off q: held, of this gen, and ended or
// not as the queue is.
func (tr *traces) pop(q *[]traceRef, ended bool) (traceRef, bool) {
	i := 0
	defer func() { *q = shift(*q, i) }()
	for ; i < len(*q); i++ {
		ref := (*q)[i]
		if h := tr.held[ref.t]; h != nil && h.gen == ref.gen && h.ended == ended {
			i++
			return ref, true
		}
	}
	return traceRef{}, false
}

// release lets a held trace's records go, keeping its emptied hold for
// the next trace.
func (r *Recorder) release(t Trace, h *heldTrace) {
	tr := &r.traces
	delete(tr.held, t)
	tr.counted -= h.counted
	tr.records -= h.n
	if len(tr.spare) < maxSpareTraces && cap(h.buf) <= maxSpareTraceBuf {
		*h = heldTrace{buf: h.buf[:0]}
		tr.spare = append(tr.spare, h)
	}
}

// compact drops the stale places of q (traces decided, or no longer
// ended or open as q is) once they are most of it: traces leave the open
// queue when their root ends or they are kept, which no pop sees.
func (tr *traces) compact(q []traceRef, ended bool) []traceRef {
	if len(q) < 64 || len(q) < 2*len(tr.held) {
		return q
	}
	return slices.DeleteFunc(q, func(ref traceRef) bool {
		h := tr.held[ref.t]
		return h == nil || h.gen != ref.gen || h.ended != ended
	})
}

// decide remembers what became of trace t.
func (r *Recorder) decide(t Trace, d decision) {
	tr := &r.traces
	if tr.decided == nil {
		tr.decided = make(map[Trace]remembered)
	}
	tr.gen++
	tr.decided[t] = remembered{d: d, at: r.now(), gen: tr.gen}
	tr.memory = append(tr.memory, traceRef{t, tr.gen})
	if len(tr.decided) > maxDecisions {
		r.forget(time.Time{})
	}
}

// forget drops the oldest decisions while there are more than
// maxDecisions, and, when now is set, those made decisionTTL before it.
func (r *Recorder) forget(now time.Time) {
	tr := &r.traces
	i := 0
	for ; i < len(tr.memory); i++ {
		ref := tr.memory[i]
		d, ok := tr.decided[ref.t]
		if !ok || d.gen != ref.gen {
			continue // decided again since: a newer place holds it
		}
		if len(tr.decided) <= maxDecisions && (now.IsZero() || now.Sub(d.at) < decisionTTL) {
			break
		}
		delete(tr.decided, ref.t)
	}
	tr.memory = shift(tr.memory, i)
}

// shift drops the first i places of q, moving the rest to the front once
// the dropped ones are most of the array, so that a queue that is always
// in use does not grow without end.
func shift(q []traceRef, i int) []traceRef {
	if i == 0 {
		return q
	}
	if i == len(q) {
		return q[:0]
	}
	if i >= cap(q)/2 {
		return append(q[:0], q[i:]...)
	}
	return q[i:]
}
