package importer

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer/internal/ahead"
	"github.com/otelrecords/otelrecords/importer/internal/seen"
	"github.com/otelrecords/otelrecords/importer/internal/sender"
	"github.com/otelrecords/otelrecords/importer/internal/sent"
	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// parkAfter is how long a kept session with nothing waiting stays in
// memory without a span before it is let go (parked): its records are
// written, and it continues under its id when its sender comes back
// within the session timeout. A gateway of thousands of senders keeps in
// memory only those that are sending.
const parkAfter = 10 * time.Second

// sessionOverhead is what a session in memory counts against
// Config.HeldBytes besides what it holds: its Recorder, maps and
// bookkeeping, so that a flood of senders of one span each is bounded too.
const sessionOverhead = 2 << 10

// remoteSession is the session of one sender process: its Recorder, its
// clock, and the spans that wait for their parents.
type remoteSession struct {
	key      string
	salt     uint64         // what its key adds to its spans' fingerprints (seenTable)
	resource sessions.Attrs // the sender's Resource, for its sender entry
	rec      *recorder.Recorder
	clock    senderClock
	last     time.Time // when its last span arrived
	traces   map[trace.TraceID]*liveTrace

	pendingSpans int // spans waiting in traces
	pendingBytes int // what they count
	heldMem      int // what the Recorder held when last accounted
	oldest       time.Time
	counted      int // what the session counts against HeldBytes now

	inflight       int  // Import calls between taking spans and their write
	inflightMarked bool // counted in inflight by the Import under way
	kept           bool // the Recorder kept the session; its sender entry is written
	entryAt        time.Time
	marks          []ahead.SeqMark // where the session stood, for its sender entry
	nextPending    uint64          // the number of its last pending entry
	pendingEntries map[uint64]int  // pending entries holding spans not placed yet: how many
	taken          []uint64        // ForwardOnly: the fingerprints of the spans recorded since its last taken entry
	evicted        int64           // waiting spans and held records the bound let go
	problems       int64           // spans refused or mapped with a problem
	cut            int64           // spans the sender's limits cut
	tallies        sent.Held       // parts of tallies sent as spans (importtally.go)
}

// parkedSession is a kept session let go while its sender was quiet, or
// ended (its sender quiet for the session timeout): enough to continue it
// under its id. The spans it took are in the Importer's seen table, under
// its sender's key. An ended session is kept for the dedup window, for
// the spans of it that come late (a queue's replay): they join it again
// rather than start another session.
type parkedSession struct {
	nextPending uint64
	id          sessions.SessionID
	start       time.Time
	clock       senderClock
	next        uint64
	last        time.Time
	marks       []ahead.SeqMark
	pending     []*pendingSpan // spans written ahead that a previous run left
	res         []attribute.KeyValue
	recovered   bool // read back from what a previous run left
}

// retiredEntry is the sender entry of an ended session that its sender's
// next session replaced in memory: kept in the store until its dedup
// window passes, so that a restart still recognises its spans.
type retiredEntry struct {
	id   uint64
	last time.Time
}

// take takes one batch: each span — rejected without valid ids, counted
// once when taken before — waiting for its parent or placed at once, in
// its sender's session (the one in progress, or one continued, or a new
// one). It returns the session, or nil when the batch brought none into
// memory: nothing valid, or only spans taken before by a session let go.
// im.mu is held.
func (im *Importer) take(b *Batch, now time.Time) (*remoteSession, Result) {
	var res Result
	var rs *remoteSession
	var key string
	var salt uint64
	keyed := false
	keptTrace := false  // the last span added kept its trace, touched's last
	var last *liveTrace // touched's last, in rs.traces (nothing leaves it before settle)
	look := &im.looking
	touched := look.Touched[:0] // in the order they came: only these can have become placeable
	for j := range b.Spans {
		s := &b.Spans[j]
		if !s.TraceID.IsValid() || !s.SpanID.IsValid() {
			res.Rejected++
			continue
		}
		if !keyed {
			key, keyed = sender.Key(b.Resource), true
			salt = im.seen.Salt(key)
			if rs = im.sessions[key]; rs != nil {
				rs.last = now
			}
			spans := b.Spans[j:]
			look.LookUp(&im.seen, salt, len(spans), func(i int) (trace.TraceID, trace.SpanID, trace.SpanID) {
				return spans[i].TraceID, spans[i].SpanID, spans[i].ParentSpanID
			})
		}
		res.Accepted++
		fp, st, parent := look.Next()
		if st == seen.Placed {
			res.Duplicates++
			continue
		}
		if rs == nil {
			// Continued, a session holds again the spans a previous run
			// wrote ahead: this one may be among them.
			rs = im.sessionFor(key, salt, b.Resource, b.Spans[j:], now)
		}
		if im.tallySpan(rs, b.Resource, s) {
			continue // a part of a tally, not a record
		}
		n := len(touched)
		same := n > 0 && touched[n-1] == s.TraceID
		t := last // the trace of the span added before, found once for a run of its spans
		if !same {
			t = rs.traces[s.TraceID]
		}
		if t != nil && t.pending[s.SpanID] != nil { // waiting
			res.Duplicates++
			continue
		}
		if parent == seen.Placed {
			im.counts.late++
		}
		keptTrace, last = im.add(rs, t, s, fp, st == seen.Wanted, same && keptTrace, now)
		if !same {
			touched = append(touched, s.TraceID)
		}
	}
	im.counts.accepted += int64(res.Accepted)
	im.counts.duplicates += int64(res.Duplicates)
	im.counts.rejected += int64(res.Rejected)
	if res.Rejected > 0 {
		im.reports.Once("ids", fmt.Errorf("otelrecords: importer: %d spans without a valid trace id and span id rejected (counted in Stats.Rejected)", res.Rejected))
	}
	if rs == nil {
		return nil, res
	}
	look.Touched = touched
	settled := look.Settled()
	for _, id := range touched {
		if t := rs.traces[id]; t != nil && !settled[id] {
			settled[id] = true
			im.settle(rs, id, t, now, false)
		}
	}
	// What still waits keeps nothing of the caller's batch (Import), and
	// counts what it holds.
	for id := range settled {
		if t := rs.traces[id]; t != nil {
			for _, p := range t.pending {
				if p.size == 0 { // added by this batch: take sizes only the spans that outlive it
					p.span.detach()
					p.from = nil
					p.size = p.span.size()
					rs.pendingBytes += p.size
				}
			}
		}
	}
	im.writeAhead(rs, now)
	im.account(rs)
	return rs, res
}

// sessionFor returns the session of the sender key (salt is its
// fingerprints' salt, res its Resource) for spans, the first of which is
// to join it: the one in memory, or the parked one continued, or a new
// one whose clock spans read. A session that ended continues too, within
// the dedup window, when the span started before it ended: a span of it
// that comes late (a queue's replay, a retry of what was not taken)
// joins it again rather than start another. im.mu is held.
func (im *Importer) sessionFor(key string, salt uint64, res []attribute.KeyValue, spans []Span, now time.Time) *remoteSession {
	if rs, ok := im.sessions[key]; ok {
		rs.last = now
		return rs
	}
	cfg := im.recorderConfig(res)
	rs := &remoteSession{key: key, salt: salt, last: now, traces: make(map[trace.TraceID]*liveTrace), resource: cfg.Resource,
		pendingEntries: make(map[uint64]int)}
	cfg.Fill = im.fillFor(rs)
	if p, ok := im.parked[key]; ok && (now.Sub(p.last) < im.cfg.SessionTimeout || len(p.pending) > 0 || p.startedIn(spans, now, im.cfg.SessionTimeout)) {
		delete(im.parked, key)
		cfg.Resume = &recorder.Resume{ID: p.id, Start: p.start, NextSeq: p.next}
		rs.clock, rs.marks, rs.kept, rs.entryAt, rs.nextPending = p.clock, p.marks, true, now, p.nextPending
		im.counts.resumed++
		rs.rec = recorder.New(cfg, im.openFor(cfg.Sink), im.now)
		if p.recovered && im.cfg.Forward != nil {
			rs.rec.QueueRow() // what reads what is handed on has not seen it since the restart
		}
		im.sessions[key] = rs
		for _, ps := range p.pending {
			im.hold(rs, rs.traces[ps.span.TraceID], ps)
		}
		return rs
	}
	if p, ok := im.parked[key]; ok {
		// Ended: the sender starts a new session. The spans the old one
		// took stay known (under the same key), and its sender entry
		// stays in the store until its window passes.
		im.retired = append(im.retired, retiredEntry{id: uint64(p.id), last: p.last})
		delete(im.parked, key)
	}
	rs.clock = measureClock(spans, now, sender.Replayed(res))
	rs.rec = recorder.New(cfg, im.openFor(cfg.Sink), im.now)
	// The session starts at its earliest span, whichever is stamped
	// first: a parent arriving after its children starts before them.
	var first time.Time
	for i := range spans {
		if start, _, _ := rs.clock.Times(spans[i].Start, spans[i].End, now); first.IsZero() || start.Before(first) {
			first = start
		}
	}
	if !first.IsZero() {
		rs.rec.Begin(first)
	}
	im.sessions[key] = rs
	return rs
}

// startedIn reports whether the first of spans, arriving now, started
// before the session p ended (timeout after its sender was last heard
// of): a span of it that comes late.
func (p *parkedSession) startedIn(spans []Span, now time.Time, timeout time.Duration) bool {
	if len(spans) == 0 {
		return false
	}
	start, _, _ := p.clock.Times(spans[0].Start, spans[0].End, now)
	return start.Before(p.last.Add(timeout))
}

// recorderConfig is the Recorder configuration of a sender's session.
func (im *Importer) recorderConfig(res []attribute.KeyValue) recorder.Config {
	cfg := im.opts.Recorder()
	cfg.Report, cfg.IDs, cfg.Process, cfg.Resource = im.reports.Once, im.ids, sender.Process(res), spanbridge.Attrs(res)
	cfg.Imported = true
	cfg.Sink = im.sink()
	if label, ok := sender.Label(res); ok {
		cfg.Label = label // the sender's own wins over the Importer's: it knows what it is doing
	}
	return cfg
}

// needWrite reports whether taking the batches needs the store: a span
// among them changes something, or belongs to a kept session. im.mu is
// held.
func (im *Importer) needWrite(batches []Batch) bool {
	now := im.now()
	for i := range batches {
		key := sender.Key(batches[i].Resource)
		if rs, ok := im.sessions[key]; ok && rs.rec.Kept() {
			return true
		}
		if p, ok := im.parked[key]; ok && (now.Sub(p.last) < im.cfg.SessionTimeout || p.startedIn(batches[i].Spans, now, im.cfg.SessionTimeout)) {
			return true
		}
		for j := range batches[i].Spans {
			if _, changed := intake.Speaks(batches[i].Spans[j].Attributes); changed {
				return true
			}
		}
	}
	return false
}

// open gives a session's Recorder the store: the one writer every session
// shares, which only the Importer closes. What the Recorder writes goes to
// its sink (sink), which writes it to this store, hands it on, or both.
func (im *Importer) open() (sessions.Store, error) {
	if im.writer != nil {
		return sharedSession{im.writer}, nil
	}
	return storeSession{im.opts.Store}, nil
}

// onStore runs fn on the store, waiting for another process that holds
// it until ctx ends.
func (im *Importer) onStore(ctx context.Context, fn func(sessions.Store) error) error {
	if im.writer != nil {
		return im.writer.Hold(ctx, fn)
	}
	return fn(im.opts.Store)
}

// sharedSession is the store writer as one session's Recorder sees it:
// ending the session does not close it.
type sharedSession struct{ *sharedstore.Writer }

// Close does nothing: the Importer closes the writer at Shutdown.
func (sharedSession) Close() error { return nil }

// CloseContext does nothing: the Importer closes the writer at Shutdown.
func (sharedSession) CloseContext(context.Context) error { return nil }

// storeSession is a store given with WithStore as one session's Recorder
// sees it: the caller owns it, and closes it.
type storeSession struct{ sessions.Store }

// Close does nothing: the store is the caller's.
func (storeSession) Close() error { return nil }

// idleKept reports whether rs is a kept session quiet for parkAfter with
// nothing waiting: time to let it go.
func (rs *remoteSession) idleKept(now time.Time) bool {
	return now.Sub(rs.last) >= parkAfter && rs.rec.Kept() && rs.idle()
}

// idle reports whether rs has nothing waiting: no span waits for its
// parent, and nothing for the store.
func (rs *remoteSession) idle() bool {
	if rs.pendingSpans > 0 {
		return false
	}
	if rs.rec.QueueTally() {
		// What it let go since its tally was written waits now too: the
		// round's flush writes it, and letting it go (park) closes a
		// Recorder with nothing to write.
		return false
	}
	n, _ := rs.rec.Pending()
	return n == 0
}

// park lets the kept session key go while its sender is quiet: it has
// nothing queued (idleKept), and what continues it is kept in im.parked.
// im.mu is held.
func (im *Importer) park(key string, rs *remoteSession) {
	id, start, ok := rs.rec.Started()
	if !ok {
		return
	}
	im.detach(key, rs)
	// Nothing is queued: closing writes nothing, and the store is the
	// Importer's to close.
	im.handle("park", rs.rec.Close(context.Background()))
	im.ended.Add(rs.stats())
	if prev, ok := im.parked[key]; ok {
		im.retired = append(im.retired, retiredEntry{id: uint64(prev.id), last: prev.last})
	}
	im.parked[key] = &parkedSession{id: id, start: start, clock: rs.clock, next: rs.rec.NextSeq(), last: rs.last,
		marks: rs.marks, nextPending: rs.nextPending, res: spanbridge.Attributes(rs.resource)}
	im.counts.parked++
}

// remembered is how long a kept session is remembered after its sender
// was last heard of: through its timeout, and the dedup window.
func (im *Importer) remembered() time.Duration {
	return max(im.cfg.SessionTimeout, im.cfg.DedupWindow)
}

// expireParked forgets the parked and ended sessions whose sender has
// been quiet past the session timeout and the dedup window. It returns
// their ids, whose sender entries the caller deletes. im.mu is held.
func (im *Importer) expireParked(now time.Time) []uint64 {
	var gone []uint64
	for key, p := range im.parked {
		if now.Sub(p.last) >= im.remembered() {
			gone = append(gone, uint64(p.id))
			delete(im.parked, key)
		}
	}
	kept := im.retired[:0]
	for _, r := range im.retired {
		if now.Sub(r.last) >= im.remembered() {
			gone = append(gone, r.id)
		} else {
			kept = append(kept, r)
		}
	}
	im.retired = kept
	return gone
}

// detach takes the session key out of the Importer: every span still
// waiting is placed, and what it counted against the bounds is given
// back. The caller closes its Recorder. im.mu is held.
func (im *Importer) detach(key string, rs *remoteSession) {
	im.settleTraces(rs, im.now(), true)
	im.let(key, rs)
}

// leave takes the kept session key out of the Importer at Shutdown: what
// waits for its parent is written ahead (the sender entry with it), not
// stamped, so that a parent coming after the next start is still stamped
// before its children; a span that could not be written ahead is placed.
// What waits only for its grace is placed first, so that the tally Close
// writes counts the marks let go, as the SpanProcessor's Shutdown does
// (written ahead, only a restart would). The caller closes its Recorder.
// im.mu is held.
func (im *Importer) leave(key string, rs *remoteSession) {
	now := im.now()
	im.settleAll(rs, now)
	im.writeAhead(rs, now)
	for id, t := range rs.traces {
		for _, p := range t.pending {
			if p.entry == 0 {
				im.settle(rs, id, t, now, true)
				break
			}
		}
	}
	im.let(key, rs)
}

// let gives back what rs counted against the bounds, and forgets it.
// im.mu is held.
func (im *Importer) let(key string, rs *remoteSession) {
	im.held -= rs.counted
	rs.counted = 0
	delete(im.sessions, key)
}

// end closes the Recorder of a session detached: what it keeps is written
// (or spooled, if another process holds the store past ctx), and what it
// counted joins the Importer's totals. It takes im.mu.
func (im *Importer) end(ctx context.Context, rs *remoteSession) error {
	err := rs.rec.Close(ctx)
	im.mu.Lock()
	im.ended.Add(rs.stats())
	im.mu.Unlock()
	return err
}

// stats is what the session counted, as the SpanProcessor's Stats.
func (rs *remoteSession) stats() recorder.Stats {
	s := rs.rec.Stats()
	s.Problems, s.AttributesDropped = rs.problems, rs.cut
	s.Evicted += rs.evicted
	return s
}

// forgetEntries deletes the sender entries and pending spans of the
// sessions ids, which have ended.
func (im *Importer) forgetEntries(ctx context.Context, ids []uint64) error {
	return im.onStore(ctx, func(st sessions.Store) error {
		for _, id := range ids {
			if err := ahead.Delete(st, id); err != nil {
				return err
			}
		}
		return nil
	})
}
