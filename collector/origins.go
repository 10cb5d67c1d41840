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

// origin is a span of a request in flight, as it came.
type origin struct {
	span  ptrace.Span
	scope instrumentation.Scope
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

// origins is what the processor knows of the requests in flight: the
// requests by id, and the records that are spans of theirs as they came.
// mu is taken after the forwarder's and after the Importer's (note runs
// under its lock), never before either.
type origins struct {
	ids  atomic.Uint64 // the last request id given
	mu   sync.Mutex
	live map[uint64]*converted
	asIs map[stamp]asIs
}

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
			o.live, o.asIs = map[uint64]*converted{}, map[stamp]asIs{}
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
			if v, ok := o.asIs[k]; ok && v.c == c {
				delete(o.asIs, k)
			}
		}
		o.mu.Unlock()
	}
	c.release()
}

// note takes the Importer's word that a record is a span as it came
// (importer.Config.AsReceived), if its request is still in flight.
func (o *origins) note(a importer.AsReceived) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.live[a.Origin>>originBits]
	i := int(a.Origin&maxOrigins) - 1
	if c == nil || i < 0 || i >= len(c.origins) {
		return
	}
	k := stamp{a.Session, a.Seq}
	o.asIs[k] = asIs{c: c, i: i, kind: a.Kind}
	c.noted = append(c.noted, k)
}

// handOn moves the span that the record of entry e is as it came into
// the spans spansOf gives for its session and scope, with records.kind
// and records.seq set on it, and reports whether it did: false for an
// entry that is no such record, which is made again from its record.
func (o *origins) handOn(e sessions.Entry, spansOf func(sessions.SessionID, instrumentation.Scope) ptrace.SpanSlice) bool {
	kind, id, seq, ok := importer.EntryStamp(e)
	if !ok {
		return false
	}
	k := stamp{id, seq}
	o.mu.Lock()
	v, ok := o.asIs[k]
	if !ok || v.kind != string(kind) {
		o.mu.Unlock()
		handedRemade.Add(1)
		return false
	}
	// Moved while the request is surely in flight: done waits for mu.
	delete(o.asIs, k)
	in := &v.c.origins[v.i]
	out := spansOf(id, instrumentation.Scope{Name: in.scope.Name, Version: in.scope.Version}).AppendEmpty()
	in.span.MoveTo(out)
	o.mu.Unlock()
	m := out.Attributes()
	m.PutStr(string(spanbridge.KindKey), v.kind)
	m.PutInt(string(spanbridge.SeqKey), int64(seq))
	handedAsReceived.Add(1)
	return true
}
