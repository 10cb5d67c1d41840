package importer

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer/internal/asis"
	"github.com/otelrecords/otelrecords/importer/internal/seen"
	"github.com/otelrecords/otelrecords/importer/internal/unencoded"
	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A sender's batch processor exports spans as they end: children before
// their parents, sometimes in an earlier batch, and a request's span
// before the work its handler left running. The Importer places
// (stamps) a span once its parent is placed — or at once, for the root
// of its trace in its sender — so that a parent's seq is below its
// children's, and spans started one after the other are stamped in that
// order. A span whose parent does not come is placed after DecisionWait,
// as a root of what arrived below it; a span that says nothing of records
// waits DefaultDecisionGrace for a record inside it, under MarksEnclosing.

// liveTrace is a trace of a session with spans waiting to be placed.
type liveTrace struct {
	pending map[trace.SpanID]*pendingSpan
	first   int64 // the arrival order of its first span waiting
	most    int   // the most spans that waited in it at once
	kept    bool  // a span of it added by this Importer changed something: it is kept
}

// maxFreeTraces is the most settled traces an Importer keeps for the
// next (freeTraces), and maxFreeTraceSpans the most spans one may have
// held: a trace's map, grown anew, costs several allocations each time.
// Together under 400 KiB, outside HeldBytes as the Importer's own.
const (
	maxFreeTraces     = 512
	maxFreeTraceSpans = 32
)

// newTrace returns an empty trace whose first span waiting is the
// order-th, one settled before when there is one. im.mu is held.
func (im *Importer) newTrace(order int64) *liveTrace {
	if n := len(im.freeTraces); n > 0 {
		t := im.freeTraces[n-1]
		im.freeTraces[n-1] = nil
		im.freeTraces = im.freeTraces[:n-1]
		t.first, t.kept = order, false
		return t
	}
	return &liveTrace{pending: make(map[trace.SpanID]*pendingSpan), first: order}
}

// settled lets trace id of rs go once nothing waits in it, keeping it
// for the next trace when it stayed small. im.mu is held.
func (im *Importer) settled(rs *remoteSession, id trace.TraceID, t *liveTrace) {
	delete(rs.traces, id)
	if t.most <= maxFreeTraceSpans && len(im.freeTraces) < maxFreeTraces {
		clear(t.pending)
		*t = liveTrace{pending: t.pending}
		im.freeTraces = append(im.freeTraces, t)
	}
}

// pendingSpan is a span waiting to be placed.
type pendingSpan struct {
	span    Span
	arrived time.Time
	size    int    // what it counts in pendingBytes; 0 until take sizes a span it added
	order   int64  // arrival order, for placing spans of equal starts as they came
	entry   uint64 // its pending entry in the store (kept sessions); 0 without one
	// wanted says a record was placed below it before it came (its
	// state in the seen set was seen.Wanted).
	wanted bool
	// settle's working links, valid during one settle of its trace (no
	// map or slice of settle's): its first child waiting, its parent's
	// next child, whether a record lies below it (MarksEnclosing).
	kid, sibling *pendingSpan
	encloses     bool
	// underPlaced says its parent was placed in this settle before it.
	underPlaced bool
	// fp is its fingerprint in the seen table, as take found it; 0 for a
	// span read back from a pending entry (computed when placed).
	fp uint64
	// speaks and changes say what its attributes say of records
	// (intake.Speaks), read once as it is held.
	speaks, changes bool
	// from is the caller's span it is a copy of, given to Import number
	// took: valid while that Import takes its batches, nil once the batch
	// that added it ends (take): a later batch's record is encoded.
	from *Span
	took uint64
}

// A scratchSpace is what recording an imported span uses and gives
// back: the encoding's (intake.Scratch), and the Importer's view of the
// span (record), kept here so that each imported span's view is not an
// allocation of its own. An Importer keeps one (Importer.recording),
// emptied of the span after each record.
type scratchSpace struct {
	intake.Scratch
	view importedView
}

// pendingSpans recycles the spans settle placed: a kept sender's spans
// mostly wait no longer than the request that brought them, and each is a
// few hundred bytes. A span goes back only once settle is done with it
// (nothing else holds a placed span), emptied so that the pool keeps
// nothing of it alive.
var pendingSpans = sync.Pool{New: func() any { return new(pendingSpan) }}

// settleScratch is settle's working space, kept by the Importer between
// settles (under its mu) so that settling a trace allocates nothing of its
// own. What a huge trace grew is let go (maxSettleScratch). Settles never
// nest: settle calls only into the session's Recorder, which never calls
// back into the Importer.
type settleScratch struct {
	ready  readyHeap
	placed []*pendingSpan
}

// maxSettleScratch is the most spans of a trace whose working space
// settle keeps for the next.
const maxSettleScratch = 256

// done recycles the spans placed and empties the space, letting go of
// what a trace of more than maxSettleScratch spans made it grow.
func (sc *settleScratch) done() {
	for _, p := range sc.placed {
		*p = pendingSpan{}
		pendingSpans.Put(p)
	}
	if cap(sc.ready) > maxSettleScratch || cap(sc.placed) > maxSettleScratch {
		*sc = settleScratch{}
		return
	}
	clear(sc.ready[:cap(sc.ready)])
	clear(sc.placed[:cap(sc.placed)])
	sc.ready, sc.placed = sc.ready[:0], sc.placed[:0]
}

// isRoot reports whether s is the root of its trace in its sender: it has
// no parent, or its parent ran in another process.
func (s *Span) isRoot() bool { return !s.ParentSpanID.IsValid() || s.ParentRemote }

// likelyRemoteChild reports whether s, whose parent is nowhere to be seen,
// is the first span of its process in a trace that another process
// began: a server's or a consumer's span (senders that do not say whether
// a parent is remote are common).
func (s *Span) likelyRemoteChild() bool {
	return s.Kind == trace.SpanKindServer || s.Kind == trace.SpanKindConsumer
}

// add takes one span of session rs, that the caller found new (not
// taken before, not waiting), whose fingerprint is fp, into its trace t
// (nil: none waits yet), and returns that trace; wanted says a
// record was placed below it before it came. kept says the span before it in its batch kept its
// trace already; add reports whether this one keeps it. im.mu is held.
func (im *Importer) add(rs *remoteSession, t *liveTrace, s *Span, fp uint64, wanted, kept bool, now time.Time) (keeps bool, in *liveTrace) {
	p := pendingSpans.Get().(*pendingSpan)
	*p = pendingSpan{span: *s, arrived: now, order: im.arrivals(), wanted: wanted, fp: fp, from: s, took: im.imports.Current()} // sized by take if it outlives it
	t = im.hold(rs, t, p)
	if !p.changes {
		return false, t
	}
	// It keeps its session (or its trace) whenever it is placed: keep it
	// now, so that it is written ahead while it waits. A trace kept by
	// the span before it stays kept (nothing decides between them).
	if !kept {
		rs.rec.KeepNow(recorder.Trace(s.TraceID))
	}
	t.kept = true
	return true, t
}

// arrivals numbers the spans the Importer takes, in order.
func (im *Importer) arrivals() int64 {
	im.counts.arrivals++
	return im.counts.arrivals
}

// hold makes p wait in its trace t (nil: none waits yet), counting its
// size, and returns the trace. im.mu is held.
func (im *Importer) hold(rs *remoteSession, t *liveTrace, p *pendingSpan) *liveTrace {
	if t == nil {
		t = im.newTrace(p.order)
		rs.traces[p.span.TraceID] = t
	}
	t.pending[p.span.SpanID] = p
	t.most = max(t.most, len(t.pending))
	p.speaks, p.changes = intake.Speaks(p.span.Attributes)
	if p.entry != 0 {
		rs.pendingEntries[p.entry]++ // written ahead by a run before this one
	}
	if rs.pendingSpans == 0 || p.arrived.Before(rs.oldest) {
		rs.oldest = p.arrived
	}
	rs.pendingSpans++
	rs.pendingBytes += p.size
	return t
}

// settleAll places what can be placed in every trace of rs; settleDue
// does it in the traces whose spans may have come due since. im.mu is
// held.
//
// Traces are settled in the order they arrived: traces placed together
// are recorded as their spans came, as the SpanProcessor records spans in
// the order they end, not in a map's.
func (im *Importer) settleAll(rs *remoteSession, now time.Time) {
	im.settleTraces(rs, now, false)
}

// settleTraces settles every trace of rs, in the order they arrived.
func (im *Importer) settleTraces(rs *remoteSession, now time.Time, force bool) {
	im.settleUntil(rs, now, force, nil)
}

// settleUntil is settleTraces, stopping before the next trace once done
// reports true (nil: never).
func (im *Importer) settleUntil(rs *remoteSession, now time.Time, force bool, done func() bool) {
	type ref struct {
		id    trace.TraceID
		t     *liveTrace
		first int64
	}
	list := make([]ref, 0, len(rs.traces))
	for id, t := range rs.traces {
		list = append(list, ref{id, t, t.first})
	}
	slices.SortFunc(list, func(a, b ref) int { return cmp.Compare(a.first, b.first) })
	for _, r := range list {
		if done != nil && done() {
			return
		}
		im.settle(rs, r.id, r.t, now, force)
	}
}

func (im *Importer) settleDue(rs *remoteSession, now time.Time) { im.settleAll(rs, now) }

// settle places the spans of trace id that can be placed now — all of
// them with force — parents before their children, and otherwise by
// start, then arrival. im.mu is held.
func (im *Importer) settle(rs *remoteSession, id trace.TraceID, t *liveTrace, now time.Time, force bool) {
	grace := min(DefaultDecisionGrace, im.cfg.DecisionWait)
	sc := &im.settling
	defer sc.done()
	// Each span waiting below a parent that waits too is linked into its
	// parent's children. A waiting span's links are zero outside settle
	// (reset as it ends, a span added zero).
	for _, p := range t.pending {
		im.seen.Touch(p.fp) // place sets it: its cache miss overlaps with this work
		if par := p.span.ParentSpanID; par.IsValid() && !p.span.ParentRemote && par != p.span.SpanID {
			if q := t.pending[par]; q != nil {
				p.sibling, q.kid = q.kid, p
			}
		}
	}
	// Under MarksEnclosing, which spans have a record below them (or had
	// one placed below them before they came): an implicit mark is
	// recorded when it does. Only a waiting span's mark is read: the walk
	// up stops at a parent that does not wait, or is marked already.
	if im.marks == MarksEnclosing {
		for _, p := range t.pending {
			if !p.speaks && !p.wanted {
				continue
			}
			for q, n := p, 0; n < intake.MaxEnclosingDepth && !q.span.isRoot(); n++ {
				if q = t.pending[q.span.ParentSpanID]; q == nil || q.encloses {
					break
				}
				q.encloses = true
			}
		}
	}
	// may reports whether p, whose parent is placed or will not come, can
	// be placed now: a span that says nothing of records waits its grace
	// for a record inside it, until the Importer shuts down (leave).
	may := func(p *pendingSpan) bool {
		return force || im.closed || im.marks != MarksEnclosing || p.speaks ||
			p.encloses || now.Sub(p.arrived) >= grace
	}
	ready := &sc.ready
	for _, p := range t.pending {
		par := p.span.ParentSpanID
		if _, waiting := t.pending[par]; waiting && !p.span.isRoot() && par != p.span.SpanID {
			continue // placed after its parent
		}
		top := force || p.span.isRoot() || im.seenState(rs, spanRef{Trace: id, Span: par}) == seen.Placed ||
			p.span.likelyRemoteChild() || now.Sub(p.arrived) >= im.cfg.DecisionWait
		if top && may(p) {
			heap.Push(ready, p)
		}
	}
	placedAny := false
	drain := func() {
		for ready.Len() > 0 {
			p := heap.Pop(ready).(*pendingSpan)
			if _, ok := t.pending[p.span.SpanID]; !ok {
				continue // placed already (pushed twice in a cycle)
			}
			im.place(rs, id, t, p, p.encloses, now)
			sc.placed = append(sc.placed, p)
			placedAny = true
			for kid := p.kid; kid != nil; kid = kid.sibling {
				kid.underPlaced = true
				if may(kid) {
					heap.Push(ready, kid)
				}
			}
		}
	}
	drain()
	// What no top reaches — below a parent that waits longer than it may
	// (or, from a hostile sender, a cycle of parents) — is placed once it
	// has waited DecisionWait, oldest first; with force, all of it now.
	// Each pass places at least the span it picks, so the passes are at
	// most the spans waiting.
	for n := len(t.pending); len(t.pending) > 0 && n > 0; n-- {
		var q *pendingSpan
		for _, p := range t.pending {
			if (force || now.Sub(p.arrived) >= im.cfg.DecisionWait) && (q == nil || p.order < q.order) {
				q = p
			}
		}
		if q == nil {
			break
		}
		heap.Push(ready, q)
		drain()
	}
	for _, p := range t.pending {
		p.kid, p.sibling, p.encloses, p.underPlaced = nil, nil, false, false // nothing of settle's links outlives it
	}
	if placedAny {
		// The trace's root is in (or will not come): under KeepByTrace
		// the Recorder decides it after its own grace, for spans arriving
		// late.
		rs.rec.EndTrace(recorder.Trace(id))
	}
	if len(t.pending) == 0 {
		im.settled(rs, id, t)
	}
}

// place stamps p and records it (as the marks policy says), and notes it
// placed. A record whose parent has not come makes the parent wanted: an
// implicit mark arriving late is recorded when a record lies inside it.
// im.mu is held.
func (im *Importer) place(rs *remoteSession, id trace.TraceID, t *liveTrace, p *pendingSpan, encloses bool, now time.Time) {
	delete(t.pending, p.span.SpanID)
	rs.pendingSpans--
	rs.pendingBytes -= p.size
	fp := p.fp
	if fp == 0 {
		fp = im.fp(rs.salt, spanRef{Trace: id, Span: p.span.SpanID})
	}
	im.seen.Set(fp, seen.Placed, im.second(now))
	if p.entry != 0 {
		im.placedPending(rs, p.entry)
	}
	recorded := im.record(rs, p, encloses || p.wanted, t.kept)
	if recorded {
		im.tookRecord(rs, fp)
	}
	// A parent placed in this settle is known placed: no lookup.
	if par := p.span.ParentSpanID; recorded && !p.span.isRoot() && !p.underPlaced && im.marks == MarksEnclosing {
		pk := spanRef{Trace: id, Span: par}
		if _, ok := t.pending[par]; !ok && im.seenState(rs, pk) == seen.None {
			im.remember(rs, pk, seen.Wanted, now)
		}
	}
}

// readyHeap orders the spans that can be placed: by start, then arrival.
type readyHeap []*pendingSpan

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	if c := h[i].span.Start.Compare(h[j].span.Start); c != 0 {
		return c < 0
	}
	return cmp.Less(h[i].order, h[j].order)
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)   { *h = append(*h, x.(*pendingSpan)) }
func (h *readyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// record stamps one imported span by its start on the gateway's clock
// and, when the marks policy records it, maps, encodes and routes its
// record through the session's Recorder: the SpanProcessor's path
// (intake.EncodeRecord, then the Recorder), on the Importer's goroutine. It
// reports whether the span is recorded (or held to be). encloses says a
// record lies inside it.
func (im *Importer) record(rs *remoteSession, p *pendingSpan, encloses, kept bool) (recorded bool) {
	s := &p.span
	start, end, odd := rs.clock.Times(s.Start, s.End, p.arrived)
	st, ok := rs.rec.Stamp(start)
	if !ok {
		return false
	}
	if !im.marks.Keeps(p.speaks, encloses) {
		rs.rec.TallyMark(s.Name, end.Sub(start)) // an implicit mark let go
		return false
	}
	defer im.recovering(rs, s, &recorded)
	w := im.scratch(s, start, end)
	defer im.unscratch(w)
	v := &w.view
	asIs := s.Origin != 0 && im.cfg.AsReceived != nil && !odd && rs.clock.Skew == 0 &&
		asis.Check(s.Kind, s.Start, s.Attributes, s.Events, s.Links)
	told := false
	kept = kept || rs.rec.KeepBy() == recorder.KeepBySession && rs.rec.Kept() // likely written at once
	if asIs && kept && im.cfg.ForwardOnly && p.from != nil && p.took != 0 && p.took == im.imports.Current() {
		// The span goes on as it came, and its record, the span's alone,
		// is read by no one while it does: queued unencoded, it is encoded
		// only if its flush fails (package unencoded).
		if kind, _, ok := intake.Plain(v); ok {
			told = true
			if im.cfg.AsReceived(AsReceived{Origin: s.Origin, Session: st.Session, Seq: st.Seq, Kind: kind}) &&
				rs.rec.RecordKeptIn(recorder.Trace(s.TraceID), kind, st, unencoded.Value) {
				im.imports.Add(rs, st, p.from)
				return true
			}
		}
	}
	enc := im.encode(rs, w, odd, st)
	if enc.Cut {
		rs.cut++
	}
	if enc.Problem != nil {
		rs.problems++
		im.reports.Once(intake.ProblemClass(enc.Problem), enc.Problem)
	}
	var err error
	switch {
	case enc.Err != nil && !errors.Is(enc.Err, recorder.ErrTooLarge):
		rs.problems++
		err = fmt.Errorf("otelrecords: encode %s record: %w", enc.Kind, enc.Err)
	case enc.Err != nil:
		err = rs.rec.RecordTooLargeIn(recorder.Trace(s.TraceID), enc.Kind, enc.Effect, enc.Name, enc.Err)
	default:
		if asIs && !told && enc.Problem == nil && !enc.Cut { // told before another Import's Flush may hand it on
			im.cfg.AsReceived(AsReceived{Origin: s.Origin, Session: st.Session, Seq: st.Seq, Kind: enc.Kind})
		}
		// Under KeepBySession the trace changes nothing; under KeepByTrace
		// the record is held with its trace until the trace is decided.
		err = rs.rec.RecordEncodedIn(recorder.Trace(s.TraceID), enc.Kind, enc.Effect, st, w.Buf, enc.Hint)
	}
	if err != nil && !errors.Is(err, sessions.ErrClosed) {
		class := "record"
		if errors.Is(err, recorder.ErrTooLarge) {
			class = "too large"
		}
		im.reports.Once(class, err)
	}
	return true
}

// recovering, deferred, recovers from a panic recording s (encoding a
// hostile span), counts and reports it, and sets *ok false (ok nil: no
// result to set).
func (im *Importer) recovering(rs *remoteSession, s *Span, ok *bool) {
	if e := recover(); e != nil {
		rs.problems++
		if ok != nil {
			*ok = false
		}
		im.reports.Once("panic", fmt.Errorf("otelrecords: recording imported span %q failed: %v", cut(s.Name, 64), e))
	}
}

// scratch returns the Importer's scratch space, its view showing s
// from start to end on the gateway's clock, until unscratch. im.mu is
// held.
func (im *Importer) scratch(s *Span, start, end time.Time) *scratchSpace {
	w := im.recording
	if w == nil {
		w = &scratchSpace{Scratch: *intake.NewScratch()}
		im.recording = w
	}
	w.view.set(s)
	w.view.start, w.view.end = start, end
	return w
}

// unscratch empties w of its span, and lets go of what a huge one grew.
func (im *Importer) unscratch(w *scratchSpace) {
	w.view = importedView{}
	if cap(w.Buf) > intake.MaxScratch {
		im.recording = nil
	}
}

// encode encodes the record of the span w shows, stamped st, into w's
// buffer: with the sender's own times beside when odd says they were
// replaced (skew.Clock.Times).
func (im *Importer) encode(rs *remoteSession, w *scratchSpace, odd bool, st sessions.Stamp) intake.Encoded {
	const inputs = -1 // an imported span does not say which attributes it started with
	level := max(rs.rec.Level(), sessions.LevelBasic)
	if odd {
		s := w.view.s
		return intake.EncodeMappedWith(&w.Scratch, &w.view, level, inputs, st, func(m *spanbridge.Mapped) { keepSenderTimes(m, s) })
	}
	return intake.EncodeRecord(&w.Scratch, &w.view, level, inputs, st)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
