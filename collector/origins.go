package collector

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The records processor hands on the spans it was given (docs/MAPPING.md
// §8.2, issue 48): a record the Importer says is a span as it came
// (importer.Config.AsReceived) goes downstream as that very span, moved
// out of its request, with records.kind and records.seq set on it, rather
// than a span made again from the record. A span's Origin names its
// request and its place in it; the request stays in flight (origins.live)
// from its conversion until Import returns, and only then is it given
// back to its receiver. A record whose request is no longer in flight —
// a span that waited for its parent, a session kept by a later request,
// a record handed on again after the store refused it — is made again
// from the record, as every record was before.

// originBits is how many low bits of an Origin say the span's place in
// its request (one more than its index); the request's id is above them.
// A request of more spans than that has the rest made again.
const (
	originBits = 24
	maxOrigins = 1<<originBits - 1
)

// origin is a span of a request in flight, as it came, and which of
// the request's sources it is one of.
type origin struct {
	span   ptrace.Span
	scope  instrumentation.Scope
	source int
}

// source is the spans of one scope of a request, as they came. When
// every one of them goes on as it came in one batch, they are handed on
// together: the slice moved whole (ptrace.SpanSlice.MoveAndAppendTo),
// no span copied.
type source struct {
	spans ptrace.SpanSlice
	// What the batch being handed on claims of it (origins.handOn):
	// how many spans, of which session, or of more than one (mixed).
	claimed int
	session sessions.SessionID
	mixed   bool
	whole   bool // moved whole: its claimed spans are handed on already
}

// stamp is a record's place: its session and seq.
type stamp struct {
	session sessions.SessionID
	seq     uint64
}

// asIs is a record that is its span as it came: the request that
// brought it, the span's place in it, and the record's kind.
type asIs struct {
	c    *converted
	i    int
	kind string
}

// claim is a record of the batch being handed on that goes on as the
// span it was: its asIs, and its stamp.
type claim struct {
	asIs
	stamp
}

// origins is what the processor knows of the requests in flight: the
// requests by id, and the records that are spans of theirs as they came.
// mu is taken after the forwarder's and after the Importer's (note runs
// under its lock), never before either.
type origins struct {
	ids  atomic.Uint64 // the last request id given
	mu   sync.Mutex
	live map[uint64]*converted
	asIs map[sessions.SessionID]*noted
	// The session noted last, which the next note and lookup are most
	// likely of (mu).
	lastID sessions.SessionID
	last   *noted
	// spare is a session's notes let go of when they emptied, for the
	// next session to note into (mu).
	spare *noted
	// handOn's scratch (mu).
	claims []claim
}

// noted is the records of a session that are spans as they came, by seq:
// a record is noted as its session stamps it, in the order of its seqs,
// and handed on in about that order, so its note is found by an index
// rather than a hash (a map of every record in flight cost more than the
// rest of the hand-on). buf[lo+i] is seq base+i; an empty one (c nil) was
// not noted, or was handed on or given up since. The front is given up
// by moving lo, and buf is used again from its start once it empties, so
// a steady stream of requests notes into one array.
type noted struct {
	base uint64
	lo   int
	buf  []asIs
}

// maxNotedGap is the most seqs a session's notes span: a record further
// from the oldest note left is not noted (it is encoded, and made a span
// again when it goes on), so that a session that stamps many records that
// are not spans as they came, between two that are, holds no room for
// them beyond this, while the oldest note's request is in flight.
const maxNotedGap = 1 << 16

// len is how many seqs the notes span, from base.
func (n *noted) len() int { return len(n.buf) - n.lo }

// put notes a at seq, and reports whether it did: not for a seq before
// the oldest note (never, as sessions stamp) or maxNotedGap or more
// after it. A note is never given up for another: the Importer may have
// queued its record unencoded, to be handed on only as the span noted.
func (n *noted) put(seq uint64, a asIs) bool {
	if n.len() == 0 {
		clear(n.buf)
		n.base, n.lo, n.buf = seq, 0, n.buf[:0]
	}
	if seq < n.base || seq-n.base >= maxNotedGap {
		return false
	}
	at := n.lo + int(seq-n.base)
	for len(n.buf) <= at {
		if n.lo > 0 && len(n.buf) == cap(n.buf) {
			// Full, with room given up at the front: move the notes
			// there rather than grow.
			live := copy(n.buf, n.buf[n.lo:])
			clear(n.buf[live:])
			n.buf, at, n.lo = n.buf[:live], at-n.lo, 0
			continue
		}
		n.buf = append(n.buf, asIs{})
	}
	n.buf[at] = a
	return true
}

// get returns the note of seq, if any.
func (n *noted) get(seq uint64) (asIs, bool) {
	if seq < n.base || seq-n.base >= uint64(n.len()) {
		return asIs{}, false
	}
	a := n.buf[n.lo+int(seq-n.base)]
	return a, a.c != nil
}

// drop forgets the note of seq when it is of c (any, when c is nil).
func (n *noted) drop(seq uint64, c *converted) {
	if seq < n.base || seq-n.base >= uint64(n.len()) {
		return
	}
	if a := &n.buf[n.lo+int(seq-n.base)]; a.c != nil && (c == nil || a.c == c) {
		*a = asIs{}
	}
	n.trim()
}

// trim gives up the empty notes at the front.
func (n *noted) trim() {
	k := 0
	for k < n.len() && n.buf[n.lo+k].c == nil {
		k++
	}
	n.shift(k)
}

// shift gives up the first k notes.
func (n *noted) shift(k int) {
	clear(n.buf[n.lo : n.lo+k])
	n.lo += k
	n.base += uint64(k)
	if n.lo == len(n.buf) {
		n.lo, n.buf = 0, n.buf[:0]
	}
}

// notesOf returns session id's notes; make adds them when there are none.
// mu is held.
func (o *origins) notesOf(id sessions.SessionID, make bool) *noted {
	if o.last != nil && o.lastID == id {
		return o.last
	}
	n := o.asIs[id]
	if n == nil {
		if !make {
			return nil
		}
		if n = o.spare; n != nil {
			o.spare = nil
		} else {
			n = &noted{}
		}
		o.asIs[id] = n
	}
	o.lastID, o.last = id, n
	return n
}

// forgetEmpty lets go of session id's notes when none is left. mu is
// held.
func (o *origins) forgetEmpty(id sessions.SessionID, n *noted) {
	if n.len() > 0 {
		return
	}
	delete(o.asIs, id)
	if o.last == n {
		o.last = nil
	}
	if cap(n.buf) <= maxSpareNotes {
		o.spare = n // the next session noted takes it, and its array
	}
}

// maxSpareNotes is the most notes the array of a spare noted holds room
// for: what a huge request grew goes.
const maxSpareNotes = 8192

// handedAsReceived counts the spans the processors of this process
// handed on as they came, and handedRemade the records they made spans
// again (for tests and benchmarks).
var handedAsReceived, handedRemade atomic.Int64

// convert converts a request of the processor (batchesOf), in flight
// until done: its spans can go on as they came meanwhile.
func (o *origins) convert(td ptrace.Traces) *converted {
	c := batchesOf(td, o.ids.Add(1))
	if len(c.origins) > 0 {
		o.mu.Lock()
		if o.live == nil {
			o.live, o.asIs = map[uint64]*converted{}, map[sessions.SessionID]*noted{}
		}
		o.live[c.id] = c
		o.mu.Unlock()
	}
	return c
}

// done ends c's flight: what of its spans was not handed on is made
// again from its record if it ever is, and nothing of c is touched again.
func (o *origins) done(c *converted) {
	if len(c.origins) > 0 {
		o.mu.Lock()
		delete(o.live, c.id)
		for _, k := range c.noted {
			if n := o.notesOf(k.session, false); n != nil {
				n.drop(k.seq, c)
				o.forgetEmpty(k.session, n)
			}
		}
		o.mu.Unlock()
	}
	c.release()
}

// note takes the Importer's word that a record is a span as it came
// (importer.Config.AsReceived), if its request is still in flight, and
// reports whether it did: the span then goes on when the record does,
// unless a write fails first, and the record may be queued unencoded.
func (o *origins) note(a importer.AsReceived) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.live[a.Origin>>originBits]
	i := int(a.Origin&maxOrigins) - 1
	if c == nil || i < 0 || i >= len(c.origins) {
		return false
	}
	n := o.notesOf(a.Session, true)
	if !n.put(a.Seq, asIs{c: c, i: i, kind: a.Kind}) {
		o.forgetEmpty(a.Session, n)
		return false
	}
	c.noted = append(c.noted, stamp{a.Session, a.Seq})
	return true
}

// handOn hands on the records among es that are spans as they came,
// moved out of their requests into the spans spansOf gives for their
// session and scope (for want more, the room to make for them), with
// records.kind and records.seq set on each; every span of a scope of a
// request that goes on in this batch goes on with its slice, moved whole.
// It gives row each entry that is not a record first, in order, so that
// the Resources made for what follows have the rows that came before the
// records (row reports whether it was one), and returns left with the
// indexes of the entries it did not take (tallies, records to make again)
// appended.
func (o *origins) handOn(es []sessions.Entry, row func(sessions.Entry) bool,
	spansOf func(id sessions.SessionID, scope instrumentation.Scope, want int) ptrace.SpanSlice, left []int) []int {
	// Moved while their requests are surely in flight: done waits for mu.
	o.mu.Lock()
	defer o.mu.Unlock()
	claims := o.claims[:0]
	for i, e := range es {
		kind, id, seq, ok := importer.EntryStamp(e)
		if !ok {
			if !row(e) {
				left = append(left, i)
			}
			continue
		}
		k := stamp{id, seq}
		n := o.notesOf(id, false)
		if n == nil {
			left = append(left, i)
			continue
		}
		v, ok := n.get(seq)
		if !ok || v.kind != string(kind) {
			left = append(left, i)
			continue
		}
		n.drop(seq, nil)
		o.forgetEmpty(id, n)
		src := &v.c.sources[v.c.origins[v.i].source]
		if src.claimed == 0 {
			src.session = id
		}
		src.mixed = src.mixed || src.session != id
		src.claimed++
		claims = append(claims, claim{v, k})
	}
	for n, cl := range claims {
		in := &cl.c.origins[cl.i]
		src := &cl.c.sources[in.source]
		span := in.span
		scope := instrumentation.Scope{Name: in.scope.Name, Version: in.scope.Version}
		switch {
		case src.whole: // moved with its slice: in.span is the span handed on
		case !src.mixed && src.claimed == src.spans.Len():
			src.spans.MoveAndAppendTo(spansOf(cl.session, scope, 0))
			src.whole = true
		default:
			span = spansOf(cl.session, scope, len(claims)-n).AppendEmpty()
			in.span.MoveTo(span)
		}
		m := span.Attributes()
		if _, ok := m.Get(string(spanbridge.KindKey)); ok {
			m.EnsureCapacity(m.Len() + 1)
		} else {
			m.EnsureCapacity(m.Len() + 2)
		}
		m.PutStr(string(spanbridge.KindKey), cl.kind)
		m.PutInt(string(spanbridge.SeqKey), int64(cl.seq))
	}
	for _, cl := range claims {
		src := &cl.c.sources[cl.c.origins[cl.i].source]
		src.claimed, src.mixed = 0, false
	}
	handedAsReceived.Add(int64(len(claims)))
	clear(claims)
	o.claims = claims[:0]
	return left
}
