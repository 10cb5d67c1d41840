package importer

import (
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/importer/internal/seen"
	"github.com/otelrecords/otelrecords/importer/internal/taken"
	"github.com/otelrecords/otelrecords/sessions"
)

// One bound over every sender (Config.HeldBytes): a thousand
// warm senders each holding its pending budget would hold a gigabyte, so
// the Importer counts what every session holds — spans waiting for their
// parents, the Recorder's held records and traces, a fixed part for the
// session itself — and past the bound lets the oldest go first, whichever
// sessions they are from, until a tenth of the bound is free again.

// account counts what rs holds now against the bound. im.mu is held.
func (im *Importer) account(rs *remoteSession) {
	mem := rs.rec.HeldMemory()
	c := rs.holding(mem)
	if rs.counted <= sessionOverhead && c > sessionOverhead {
		rs.oldest = rs.last // it held nothing before this batch
	}
	im.held += c - rs.counted
	rs.counted, rs.heldMem = c, mem
}

// holding is what rs holds, against the bound, when its Recorder holds
// mem: a fixed part, its waiting spans and their traces' entries, the ids
// of its next taken entry, and mem.
func (rs *remoteSession) holding(mem int) int {
	return sessionOverhead + rs.pendingBytes + len(rs.traces)*liveTraceBytes + cap(rs.taken)*taken.RefBytes + mem
}

// keepWithinHeld lets the oldest held data go while the sessions hold
// more than HeldBytes, down to nine tenths of it: sessions are taken
// oldest data first, and each gives what it holds, oldest first — a
// session not kept yet drops its oldest spans and records (counted in
// Stats.Evicted, as a warm run's are); a kept session records the spans
// it has waiting for their parents at once, oldest traces first (they
// are in the store already, written ahead). im.mu is held.
func (im *Importer) keepWithinHeld(now time.Time) {
	if im.held <= im.cfg.HeldBytes {
		return
	}
	target := im.cfg.HeldBytes - im.cfg.HeldBytes/10
	list := make([]*remoteSession, 0, len(im.sessions))
	for _, rs := range im.sessions {
		if rs.counted > sessionOverhead || rs.idleEmpty(now) {
			list = append(list, rs)
		}
	}
	slices.SortFunc(list, func(a, b *remoteSession) int { return a.oldest.Compare(b.oldest) })
	for _, rs := range list {
		if im.held <= target {
			return
		}
		im.evict(rs, im.held-target, now)
	}
}

// idleEmpty reports whether rs is a session that holds nothing, has
// written nothing and has been quiet for parkAfter: forgetting it loses
// nothing, and its sender starts afresh when it comes back.
func (rs *remoteSession) idleEmpty(now time.Time) bool {
	return rs.inflight == 0 && rs.pendingSpans == 0 && rs.heldMem == 0 && !rs.rec.Kept() && now.Sub(rs.last) >= parkAfter
}

// evict lets go of up to need bytes of what rs holds, oldest first.
// im.mu is held.
func (im *Importer) evict(rs *remoteSession, need int, now time.Time) {
	before := rs.counted
	freed := func() int { return before - rs.holding(rs.heldMem) }
	if rs.rec.Kept() {
		// Its waiting spans are written ahead: record them now, without
		// waiting longer for their parents — the traces that came first,
		// until need is freed, so that what is recorded at once (and
		// written in one go) is about a tenth of the bound, not all of it.
		im.settleUntil(rs, now, true, func() bool { return freed() >= need })
	} else {
		for _, p := range rs.oldestPending() {
			if freed() >= need {
				break
			}
			im.drop(rs, p, now)
		}
	}
	if left := need - freed(); left > 0 && rs.heldMem > 0 {
		rs.evicted += int64(rs.rec.DropHeld(rs.rec.HeldCounted() - left))
	}
	im.account(rs)
	if freed := before - rs.counted; freed > 0 && before > sessionOverhead {
		// What went was the oldest part of what it held: its oldest data
		// now is that much later.
		frac := float64(freed) / float64(before-sessionOverhead)
		rs.oldest = rs.oldest.Add(time.Duration(frac * float64(rs.last.Sub(rs.oldest))))
	}
	if rs.idleEmpty(now) {
		im.held -= rs.counted
		im.ended.Add(rs.stats())
		delete(im.sessions, rs.key)
	}
}

// oldestPending returns rs's waiting spans, oldest first.
func (rs *remoteSession) oldestPending() []*pendingSpan {
	var all []*pendingSpan
	for _, t := range rs.traces {
		for _, p := range t.pending {
			all = append(all, p)
		}
	}
	slices.SortFunc(all, func(a, b *pendingSpan) int {
		if c := a.arrived.Compare(b.arrived); c != 0 {
			return c
		}
		return int(a.order - b.order)
	})
	return all
}

// drop lets a waiting span of a session not kept go, as the pending
// budget lets a held record go: counted in Stats.Evicted and in the
// session's tally. Its children no longer wait for it; taken once, it is
// not tallied again when it comes again. im.mu is held.
func (im *Importer) drop(rs *remoteSession, p *pendingSpan, now time.Time) {
	im.tallyDropped(rs, p)
	t := rs.traces[p.span.TraceID]
	delete(t.pending, p.span.SpanID)
	if len(t.pending) == 0 {
		delete(rs.traces, p.span.TraceID)
	}
	rs.pendingSpans--
	rs.pendingBytes -= p.size
	rs.evicted++
	im.remember(rs, spanRef{Trace: p.span.TraceID, Span: p.span.SpanID}, seen.Placed, now)
}

// tallyDropped counts p, a span drop lets go, in rs's tally as record
// would have: its record, unstamped (never a changed one, which no tally
// counts; a change keeps its session while it waits, so none is let go),
// or the implicit mark the marks policy lets go, a record waiting below
// it not looked for. im.mu is held.
func (im *Importer) tallyDropped(rs *remoteSession, p *pendingSpan) {
	s := &p.span
	start, end, odd := rs.clock.Times(s.Start, s.End, p.arrived)
	if !im.marks.Keeps(p.speaks, p.wanted) {
		rs.rec.TallyMark(s.Name, end.Sub(start))
		return
	}
	defer im.recovering(rs, s, nil)
	w := im.scratch(s, start, end)
	defer im.unscratch(w)
	if enc := im.encode(rs, w, odd, sessions.Stamp{}); enc.Err == nil && enc.Effect != sessions.Changed {
		rs.rec.TallyRecord(enc.Kind, w.Buf)
	}
}
