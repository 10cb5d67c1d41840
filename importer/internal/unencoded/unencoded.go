// Package unencoded keeps what an Importer that keeps no records (the
// Collector's records processor without a store of records) needs to
// queue a record without its value. The record of a span that goes on
// as it came (importer.Config.AsReceived) is the span's alone, and the
// processor hands the span itself on: encoding the record would be work
// that no one reads, a fifth of the processor's own CPU. The Recorder
// queues such a record with Value, and it is handed on while the request
// that brought its span is in flight. Only a flush that fails keeps it
// queued past that; the Import that queued it then encodes it before it
// returns (Records.Fill), while its span is still the caller's, so that
// it goes on later made from its record, as any record handed on again.
package unencoded

import (
	"fmt"

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
}

type record[O comparable, S any] struct {
	owner O
	st    sessions.Stamp
	span  *S
}

// Add notes that owner queued the record of span, stamped st, unencoded.
func (r *Records[O, S]) Add(owner O, st sessions.Stamp, span *S) {
	r.list = append(r.list, record[O, S]{owner, st, span})
}

// Len is how many records r holds.
func (r *Records[O, S]) Len() int { return len(r.list) }

// Reset empties r, keeping its room, and lets go of the spans.
func (r *Records[O, S]) Reset() {
	clear(r.list)
	r.list = r.list[:0]
}

// Fill returns what a flush of owner's queue that failed gives each entry
// still queued (recorder.Recorder.FlushFilling): for a record of r's
// queued unencoded, the value encode gives it, in place of Value. Another
// Import's records are left as they are: that Import fills them after
// its own flush, which waits for this one. A record encode fails for,
// which cannot be for a record queued so (its span was plain), is
// reported to report and stays unencoded.
func (r *Records[O, S]) Fill(owner O, encode func(span *S, st sessions.Stamp) ([]byte, error), report func(error)) func(*sessions.Entry) {
	var at map[uint64]int // by seq, built at the first record of r's met
	return func(e *sessions.Entry) {
		if !Is(e.Value) {
			return
		}
		_, tail, err := keys.Split(e.Key)
		if err != nil {
			return
		}
		id, seq, ok := keys.RecordTail(tail)
		if !ok {
			return
		}
		if at == nil {
			at = make(map[uint64]int)
			for i, rec := range r.list {
				if rec.owner == owner {
					at[rec.st.Seq] = i
				}
			}
		}
		i, ok := at[seq]
		if !ok || uint64(r.list[i].st.Session) != id {
			return
		}
		v, err := encode(r.list[i].span, r.list[i].st)
		if err != nil {
			report(fmt.Errorf("otelrecords: importer: encode a record queued unencoded: %w", err))
			return
		}
		e.Value = v
	}
}

// Imports tells which Import of an Importer is taking its batches, and
// keeps what it queued unencoded until its flushes are done. The zero
// Imports has begun none. It is guarded by the Importer's lock.
type Imports[O comparable, S any] struct {
	begun, current uint64
	queued         Records[O, S]
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

// End ends the current Import's taking and returns what it queued, which
// the Import fills should its flush fail (Records.Fill), then gives back.
func (im *Imports[O, S]) End() *Records[O, S] {
	im.current = 0
	q := im.queued
	im.queued = Records[O, S]{}
	return &q
}

// GiveBack takes q, emptied, for the next Import to queue into.
func (im *Imports[O, S]) GiveBack(q *Records[O, S]) {
	q.Reset()
	im.queued = *q
}
