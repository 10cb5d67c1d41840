// Package unencoded keeps what an Importer that keeps no records (the
// Collector's records processor without a store of records) needs to
// queue a record without its value. The record of a span that goes on
// as it came (importer.Config.AsReceived) is the span's alone, and the
// processor hands the span itself on: encoding the record would be work
// that no one reads, a fifth of the processor's own CPU. The Recorder
// queues such a record with Value, and it is handed on while the request
// that brought its span is in flight. Only a flush that fails keeps it
// queued past that — any flush of its session: its Import's, another
// Import's, the loop's, Close's — and that flush encodes it at once
// (Imports.Fill, given as recorder.Config.Fill), while the Import that
// queued it has not returned and its span is still the caller's, so that
// it goes on later made from its record, as any record handed on again.
// At once, for the Collector forgets a span's note as it hands it on,
// whether downstream takes it or not.
package unencoded

import (
	"fmt"
	"sync"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Value is the value a record is queued with unencoded. A record's value
// is a CBOR map, whose first byte is never 0x00.
var Value = []byte{0}

// Is reports whether v is Value: the value of a record queued unencoded.
func Is(v []byte) bool { return len(v) == 1 && v[0] == 0 }

// Records are the records one Import queued unencoded: the session that
// queued each (its owner), its stamp and its span, which the caller of
// the Import holds until it returns. The zero Records is empty.
type Records[O comparable, S any] struct {
	list []record[O, S]
	at   map[at[O]]int // list's index by owner and seq, built at the first lookup
}

type record[O comparable, S any] struct {
	owner O
	st    sessions.Stamp
	span  *S
}

type at[O comparable] struct {
	owner O
	seq   uint64
}

// Add notes that owner queued the record of span, stamped st, unencoded.
func (r *Records[O, S]) Add(owner O, st sessions.Stamp, span *S) {
	r.list = append(r.list, record[O, S]{owner, st, span})
	r.at = nil
}

// Len is how many records r holds.
func (r *Records[O, S]) Len() int { return len(r.list) }

// Reset empties r, keeping its room, and lets go of the spans.
func (r *Records[O, S]) Reset() {
	clear(r.list)
	r.list, r.at = r.list[:0], nil
}

// fill gives e, an entry owner queued, the value encode gives it when it
// is a record of r's queued unencoded, and reports whether it was one.
// A record encode fails for, which cannot be for a record queued so (its
// span was plain), is reported to report and stays unencoded.
func (r *Records[O, S]) fill(owner O, e *sessions.Entry, encode func(span *S, st sessions.Stamp) ([]byte, error), report func(error)) bool {
	_, tail, err := keys.Split(e.Key)
	if err != nil {
		return false
	}
	id, seq, ok := keys.RecordTail(tail)
	if !ok {
		return false
	}
	if r.at == nil {
		r.at = make(map[at[O]]int, len(r.list))
		for i, rec := range r.list {
			r.at[at[O]{rec.owner, rec.st.Seq}] = i
		}
	}
	i, ok := r.at[at[O]{owner, seq}]
	if !ok || uint64(r.list[i].st.Session) != id {
		return false
	}
	v, err := encode(r.list[i].span, r.list[i].st)
	if err != nil {
		report(fmt.Errorf("otelrecords: importer: encode a record queued unencoded: %w", err))
		return true
	}
	e.Value = v
	return true
}

// Imports tells which Import of an Importer is taking its batches, and
// keeps what each Import queued unencoded until its flushes are done, for
// any failed flush to fill in (Fill). The zero Imports has begun none.
// Begin, Current, Add and End are guarded by the Importer's lock; the
// Imports in flight by a lock of their own, which Fill takes under a
// Recorder's lock.
type Imports[O comparable, S any] struct {
	begun, current uint64
	queued         Records[O, S]

	mu       sync.Mutex
	inflight []*Records[O, S] // what the Imports past End queued, until GiveBack
}

// Begin starts the next Import's taking.
func (im *Imports[O, S]) Begin() {
	im.begun++
	im.current = im.begun
}

// Current is the number of the Import taking its batches, 0 for none: a
// span it took may be queued unencoded only while its Import is current.
func (im *Imports[O, S]) Current() uint64 { return im.current }

// Add notes that owner queued the record of span, stamped st, unencoded,
// for the current Import.
func (im *Imports[O, S]) Add(owner O, st sessions.Stamp, span *S) { im.queued.Add(owner, st, span) }

// End ends the current Import's taking and returns what it queued, in
// flight until the Import gives it back (GiveBack) once its flushes are
// done and before it returns: until then a failed flush fills its records
// in (Fill).
func (im *Imports[O, S]) End() *Records[O, S] {
	im.current = 0
	q := im.queued
	im.queued = Records[O, S]{}
	if q.Len() > 0 {
		im.mu.Lock()
		im.inflight = append(im.inflight, &q)
		im.mu.Unlock()
	}
	return &q
}

// GiveBack takes q, emptied, for the next Import to queue into. No flush
// fills its records in from then on: the caller's spans are let go.
func (im *Imports[O, S]) GiveBack(q *Records[O, S]) {
	if q.Len() > 0 {
		im.mu.Lock()
		for i, f := range im.inflight {
			if f == q {
				last := len(im.inflight) - 1
				im.inflight[i] = im.inflight[last]
				im.inflight[last] = nil
				im.inflight = im.inflight[:last]
				break
			}
		}
		im.mu.Unlock()
	}
	q.Reset()
	im.queued = *q
}

// Fill returns what a failed flush of owner's queue gives each entry
// still queued (recorder.Config.Fill): a record queued unencoded by an
// Import in flight gets the value encode gives it from its span. A
// record queued so whose Import has returned is never still queued: its
// flush took it, and failing, filled it in.
func (im *Imports[O, S]) Fill(owner O, encode func(span *S, st sessions.Stamp) ([]byte, error), report func(error)) func(*sessions.Entry) {
	return func(e *sessions.Entry) {
		if !Is(e.Value) {
			return
		}
		im.mu.Lock()
		defer im.mu.Unlock()
		for _, q := range im.inflight {
			if q.fill(owner, e, encode, report) {
				return
			}
		}
	}
}
