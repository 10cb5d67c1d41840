package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// heldTrace is a trace whose spans wait for its root, or for the
// decision wait to pass.
type heldTrace struct {
	spans   []*ImportedSpan
	bytes   int
	first   time.Time // when its first span arrived
	root    time.Time // when its root arrived; zero until then
	arrival int64     // how many traces the Importer held before it
}

// dueTraces returns the ids of the traces of rs for which due is true,
// in the order they arrived: traces decided together are recorded in
// that order, as the SpanProcessor records spans in the order they end,
// not in a map's.
func (rs *remoteSession) dueTraces(due func(*heldTrace) bool) []trace.TraceID {
	var ids []trace.TraceID
	for id, t := range rs.traces {
		if due(t) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b trace.TraceID) int {
		return cmp.Compare(rs.traces[a].arrival, rs.traces[b].arrival)
	})
	return ids
}

// maxDecisions bounds the decisions a session remembers (a few MiB at
// most): past it the oldest are forgotten before decisionMemory.
const maxDecisions = 1 << 15

// decision is what is remembered of a recorded trace: when it was
// decided, and the spans it did not hold that enclose a record (a
// record's parent, or that parent's, that had not arrived), so that an
// implicit mark arriving late is recorded when it encloses a record.
type decision struct {
	at       time.Time
	encloses map[trace.SpanID]struct{}
}

// isRoot reports whether s is the root of its trace in its sender: it has
// no parent, or its parent ran in another process.
func (s *ImportedSpan) isRoot() bool { return !s.ParentSpanID.IsValid() || s.ParentRemote }

// add takes one span of session rs: a span of a decided trace is recorded
// at once; any other is held with its trace.
func (im *Importer) add(rs *remoteSession, s *ImportedSpan, now time.Time) {
	if !s.TraceID.IsValid() || !s.SpanID.IsValid() {
		rs.problems++
		im.reports.once("ids", fmt.Errorf("otelrecords: importer: span %q has no valid trace and span ids; dropped", cut(s.Name, 64)))
		return
	}
	if d, ok := rs.decisions[s.TraceID]; ok {
		im.late++
		_, enclosed := d.encloses[s.SpanID]
		im.record(rs, s, enclosed)
		return
	}
	t := rs.traces[s.TraceID]
	if t == nil {
		t = &heldTrace{first: now, arrival: im.arrivals}
		im.arrivals++
		rs.traces[s.TraceID] = t
	}
	if s.isRoot() && t.root.IsZero() {
		t.root = now
	}
	n := s.size()
	t.spans = append(t.spans, s)
	t.bytes += n
	im.held += n
}

// decideDue records the traces of rs whose time has come: their root
// arrived DefaultDecisionGrace ago, or their first span DecisionWait ago.
//
// It writes every writeAt bytes of records the session keeps, as the
// SpanProcessor's loop does, so that many traces decided at once neither
// wait in one large batch nor grow it past what the Recorder reuses.
func (im *Importer) decideDue(ctx context.Context, rs *remoteSession, now time.Time) error {
	grace := min(DefaultDecisionGrace, im.cfg.DecisionWait)
	var errs []error
	due := rs.dueTraces(func(t *heldTrace) bool {
		return (!t.root.IsZero() && now.Sub(t.root) >= grace) || now.Sub(t.first) >= im.cfg.DecisionWait
	})
	for _, id := range due {
		im.decide(rs, id)
		if _, bytes := rs.rec.Pending(); bytes >= writeAt {
			errs = append(errs, rs.rec.Flush(ctx))
		}
	}
	return errors.Join(errs...)
}

// keepWithinHeld decides the traces that arrived first, over every
// session, until what is held is within HeldBytes again: a sender that
// never sends its roots cannot make the Importer grow.
func (im *Importer) keepWithinHeld() {
	if im.held <= im.cfg.HeldBytes {
		return
	}
	type waiting struct {
		rs      *remoteSession
		id      trace.TraceID
		arrival int64
	}
	var all []waiting
	for _, rs := range im.sessions {
		for id, t := range rs.traces {
			all = append(all, waiting{rs, id, t.arrival})
		}
	}
	slices.SortFunc(all, func(a, b waiting) int { return cmp.Compare(a.arrival, b.arrival) })
	for _, w := range all {
		if im.held <= im.cfg.HeldBytes {
			return
		}
		im.decide(w.rs, w.id)
	}
}

// decide records the held trace id of rs and remembers the decision. Its
// spans are stamped in start order, a parent before its children at an
// equal start (senders whose clocks tick in milliseconds start many
// children at their parent's instant), so that seqs say what started
// inside what; under MarksEnclosing an implicit mark is recorded when a
// record of the trace lies inside it, at any depth.
func (im *Importer) decide(rs *remoteSession, id trace.TraceID) {
	t := rs.traces[id]
	delete(rs.traces, id)
	im.held -= t.bytes
	d := &decision{at: im.now()}
	rs.decisions[id] = d
	rs.order = append(rs.order, id)
	if len(rs.order) > maxDecisions {
		delete(rs.decisions, rs.order[0])
		rs.order = rs.order[1:]
	}
	byID := make(map[trace.SpanID]int, len(t.spans))
	for i, s := range t.spans {
		byID[s.SpanID] = i
	}
	depth := depths(t.spans, byID)
	order := make([]int, len(t.spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := t.spans[a].Start.Compare(t.spans[b].Start); c != 0 {
			return c
		}
		return cmp.Compare(depth[a], depth[b])
	})
	encloses := make([]bool, len(t.spans))
	if im.marks == MarksEnclosing {
		for i, s := range t.spans {
			if !speaksRecords(s.Attributes) {
				continue
			}
			p := s
			for range maxEnclosingDepth {
				if p.isRoot() {
					break
				}
				j, ok := byID[p.ParentSpanID]
				if !ok {
					if d.encloses == nil {
						d.encloses = make(map[trace.SpanID]struct{})
					}
					d.encloses[p.ParentSpanID] = struct{}{}
					break
				}
				if encloses[j] || j == i {
					break
				}
				encloses[j] = true
				p = t.spans[j]
			}
		}
	}
	for _, i := range order {
		im.record(rs, t.spans[i], encloses[i])
	}
	// The trace's root is in (or will not come): under KeepByTrace the
	// Recorder decides it after its own grace, for spans arriving late.
	rs.rec.EndTrace(recorder.Trace(id))
}

// depths returns how deep each span lies below the first of its
// ancestors the trace does not hold; a cycle of parents (a hostile
// sender's) ends the walk.
func depths(spans []*ImportedSpan, byID map[trace.SpanID]int) []int {
	depth := make([]int, len(spans))
	for i := range spans {
		p := spans[i]
		for n := 0; n < maxEnclosingDepth && !p.isRoot(); n++ {
			j, ok := byID[p.ParentSpanID]
			if !ok {
				break
			}
			depth[i]++
			p = spans[j]
		}
	}
	return depth
}

// forget lets go of decisions older than decisionMemory.
func (rs *remoteSession) forget(now time.Time) {
	n := 0
	for _, id := range rs.order {
		if d := rs.decisions[id]; d != nil && now.Sub(d.at) < decisionMemory {
			break
		}
		delete(rs.decisions, id)
		n++
	}
	rs.order = rs.order[n:]
}

// record stamps one imported span by its start and, when the marks policy
// records it, maps, encodes and routes its record through the session's
// Recorder: the SpanProcessor's path (encodeRecord, then the Recorder),
// on the Importer's goroutine. encloses says a record lies inside it.
func (im *Importer) record(rs *remoteSession, s *ImportedSpan, encloses bool) {
	st, ok := rs.rec.Stamp(s.Start)
	if !ok || !im.marks.records(s.Attributes, encloses) {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			rs.problems++
			im.reports.once("panic", fmt.Errorf("otelrecords: recording imported span %q failed: %v", cut(s.Name, 64), p))
		}
	}()
	w := scratch.Get().(*scratchSpace)
	defer func() {
		if cap(w.buf) <= maxScratch {
			scratch.Put(w)
		}
	}()
	inputs := -1 // an imported span does not say which attributes it started with
	enc := encodeRecord(w, view(s), max(rs.rec.Level(), sessions.LevelBasic), inputs, st)
	if enc.cut {
		rs.cut++
	}
	if enc.problem != nil {
		rs.problems++
		im.reports.once(problemClass(enc.problem), enc.problem)
	}
	var err error
	switch {
	case enc.err != nil && !errors.Is(enc.err, recorder.ErrTooLarge):
		rs.problems++
		err = fmt.Errorf("otelrecords: encode %s record: %w", enc.kind, enc.err)
	case enc.err != nil:
		err = rs.rec.RecordTooLargeIn(recorder.Trace(s.TraceID), enc.kind, enc.effect, enc.name, enc.err)
	default:
		// Under KeepBySession the trace changes nothing; under KeepByTrace
		// the record is held with its trace until the trace is decided.
		err = rs.rec.RecordEncodedIn(recorder.Trace(s.TraceID), enc.kind, enc.effect, st, w.buf)
	}
	if err != nil && !errors.Is(err, sessions.ErrClosed) {
		class := "record"
		if errors.Is(err, recorder.ErrTooLarge) {
			class = "too large"
		}
		im.reports.once(class, err)
	}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
