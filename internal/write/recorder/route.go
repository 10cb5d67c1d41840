package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
)

// Record routes one stamped record through the retention rules. Before the
// session's first Changed record it is held in memory (past the budget the
// oldest held records go first); the first Changed record keeps the
// session: prune to KeepSessions-1 other sessions, write the session row,
// the held records oldest first, then the record itself; after that every
// record is written. Writes are batched until Flush. The kind must pass
// CheckKind; a record with an invalid kind is refused with an error
// wrapping ErrInvalidKind, and nothing else changes. A record no store can
// hold (larger than MaxRecordSize, say) is dropped with an error wrapping
// ErrTooLarge and counted in Stats.TooLarge; if it was Changed, it still
// keeps the session.
func (r *Recorder) Record(kind string, effect sessions.Effect, st sessions.Stamp, body sessions.Record) error {
	k, err := r.checkKind(kind)
	if err != nil {
		return err
	}
	body.Effect = effect // the record says what it did (FORMAT.md §3.2)
	value, err := AppendEncoded(nil, k, st, &body)
	if errors.Is(err, ErrTooLarge) {
		return r.routeLocked(Trace{}, k, effect, st, nil, tally.Hint{}, err, body.Name)
	}
	if err != nil {
		return fmt.Errorf("otelrecords: encode %s record: %w", k, err)
	}
	return r.routeLocked(Trace{}, k, effect, st, value, tally.Hint{}, nil, "")
}

// RecordEncoded is Record for a record already encoded, as AppendEncoded
// encodes it (with its stamp st, and effect in its body): the exporter
// encodes on the goroutine that ended the span and hands the loop bytes.
// The value is copied (into the held records, or into the batch's arena),
// so the caller may reuse it at once; routing it allocates nothing once
// the buffers have grown to the session's pace.
func (r *Recorder) RecordEncoded(kind string, effect sessions.Effect, st sessions.Stamp, value []byte) error {
	return r.RecordEncodedIn(Trace{}, kind, effect, st, value, tally.Hint{})
}

// RecordEncodedIn is RecordEncoded for a record of trace t: under
// KeepByTrace it is held with its trace until the trace is decided (see
// KeepByTrace); under KeepBySession, or with the zero Trace, the trace
// changes nothing. hint, when not zero, is where the encoder put the
// fields a tally reads in value: a held record let go is counted from it.
func (r *Recorder) RecordEncodedIn(t Trace, kind string, effect sessions.Effect, st sessions.Stamp, value []byte, hint tally.Hint) error {
	k, err := r.checkKind(kind)
	if err != nil {
		return err
	}
	return r.routeLocked(t, k, effect, st, value, hint, nil, "")
}

// RecordKeptIn queues value as the record of trace t stamped st if the
// record is written at once — its trace is kept already, or, under
// KeepBySession or with the zero Trace, its session is — and reports
// whether it did; otherwise it does nothing, and the caller routes the
// record as RecordEncodedIn does. Only a record written at once may be
// queued with a value that is not its encoding (the Importer of the
// Collector's records processor queues one whose span goes on as it
// came): a record held could be let go, and tallied from its value.
func (r *Recorder) RecordKeptIn(t Trace, kind string, st sessions.Stamp, value []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.kept {
		return false
	}
	if r.keepBy == KeepByTrace && t != (Trace{}) {
		if d, ok := r.traces.decided[t]; !ok || d.d != decidedKept {
			return false
		}
	}
	r.queueRecord(kind, uint64(st.Session), st.Seq, value)
	return true
}

// RecordTooLarge routes a record that could not be encoded within what a
// store holds (cause wraps ErrTooLarge, as AppendEncoded returns it): it
// is dropped and counted in Stats.TooLarge, and if it was Changed it still
// keeps the session. The error it returns names the record (name) and
// says why.
func (r *Recorder) RecordTooLarge(kind string, effect sessions.Effect, name string, cause error) error {
	return r.RecordTooLargeIn(Trace{}, kind, effect, name, cause)
}

// RecordTooLargeIn is RecordTooLarge for a record of trace t: under
// KeepByTrace, if it was Changed it still keeps its trace.
func (r *Recorder) RecordTooLargeIn(t Trace, kind string, effect sessions.Effect, name string, cause error) error {
	k, err := r.checkKind(kind)
	if err != nil {
		return err
	}
	return r.routeLocked(t, k, effect, sessions.Stamp{}, nil, tally.Hint{}, cause, name)
}

// checkKind returns kind in canonical form, or counts it Invalid.
func (r *Recorder) checkKind(kind string) (string, error) {
	k, err := keys.CheckKind(kind)
	if err != nil {
		r.mu.Lock()
		r.stats.Invalid++
		r.mu.Unlock()
	}
	return k, err
}

// routeLocked routes under r.mu and calls the keep hook, outside it, if
// this record kept the session.
func (r *Recorder) routeLocked(t Trace, k string, effect sessions.Effect, st sessions.Stamp, value []byte, hint tally.Hint, encErr error, name string) error {
	r.mu.Lock()
	wasKept := r.kept
	var err error
	switch {
	case r.closed:
		err = sessions.ErrClosed
	case r.keepBy == KeepByTrace && t != Trace{}:
		err = r.routeTrace(t, k, effect, st, value, hint, encErr, name)
	default:
		err = r.route(k, effect, st, value, hint, encErr, name)
	}
	keptNow := !wasKept && r.kept
	r.mu.Unlock()
	if keptNow && r.onKeep != nil {
		r.onKeep() // outside the lock: the hook may call back
	}
	return err
}

// route applies the retention rules to an encoded record (or to encErr,
// why it could not be encoded); r.mu is held.
func (r *Recorder) route(k string, effect sessions.Effect, st sessions.Stamp, value []byte, hint tally.Hint, err error, name string) error {
	if r.closed {
		return sessions.ErrClosed
	}
	if err != nil {
		// Dropped here, once: queued, a record no store takes would fail
		// its batch at every flush and hold back every record after it.
		// A change still keeps the session, which did change the caches.
		r.stats.TooLarge++
		if effect == sessions.Changed && !r.kept {
			r.keepSession()
		}
		return tooLarge(k, name, err)
	}
	if !r.kept && effect != sessions.Changed {
		// A held record needs no key until the session is kept: its kind
		// and stamp give it back then.
		r.stats.Evicted += int64(r.holdRecord(k, st, value, hint))
		return nil
	}
	if !r.kept {
		r.keepSession()
	}
	r.queueRecord(k, uint64(st.Session), st.Seq, value)
	return nil
}

// tooLarge is the error of a record of kind k, named name, dropped
// because no store holds it (err says why).
func tooLarge(k, name string, err error) error {
	return fmt.Errorf("otelrecords: %s record %q dropped: %w", k, cutName(name), err)
}

// holdRecord holds a record of a session not kept yet. Its payload is its
// seq, its kind's length and kind, the hint of its tally fields, then its
// value; its key is rebuilt from them when the session is kept. It counts
// what it will take in the store, namespace + key + value bytes: the key
// is 19 bytes longer than the payload's seq and kind, more than the
// hint's 6 and the buffer's 8-byte header, so the buffer never needs more
// than the budget (package hold): a session that never changes anything
// holds its budget and little else (BENCHMARKS.md, figure 3). No kind is
// interned: a program whose kinds vary (compile/<hash>) holds nothing for
// kinds it no longer records.
func (r *Recorder) holdRecord(kind string, st sessions.Stamp, value []byte, hint tally.Hint) (dropped int) {
	var pre [9 + tally.HintSize]byte
	binary.BigEndian.PutUint64(pre[:8], st.Seq)
	pre[8] = byte(len(kind)) // at most keys.MaxKindLen, 128
	tally.AppendHint(pre[9:9], hint)
	return r.held.Hold(struct{}{}, keys.Size(kind)+len(value), pre[:9], []byte(kind), pre[9:], value)
}

// heldParts splits a payload holdRecord made into its seq, kind, hint
// and value.
func heldParts(p []byte) (seq uint64, kind []byte, hint tally.Hint, value []byte) {
	n := int(p[8])
	return binary.BigEndian.Uint64(p), p[9 : 9+n], tally.ReadHint(p[9+n:]), p[9+n+tally.HintSize:]
}

// appendHeld queues the held records, oldest first, as entries to write:
// keys rebuilt, values copied out of the buffer into the arena; r.mu is
// held.
func (r *Recorder) appendHeld() {
	if r.held.Len() == 0 {
		return
	}
	id := uint64(r.start.Load().id)
	r.held.Each(func(_ struct{}, p []byte) {
		seq, kind, _, value := heldParts(p)
		r.queueRecord(string(kind), id, seq, value) // once, at the keep

	})
}

// keepSession marks the session kept and queues the session row and the
// held records, oldest first. The prune that must come before them runs at
// the next Flush, once the store is open.
func (r *Recorder) keepSession() {
	r.kept = true
	r.needPrune = r.keep > 0
	r.stats.SessionsKept = 1
	r.queueSession()
	r.appendHeld()
	r.held.Reset()
}

// queueSession queues the session row as it is now.
func (r *Recorder) queueSession() {
	s := r.start.Load()
	if s == nil {
		s = r.startSession(r.now())
	}
	v, err := r.row(s).MarshalCBOR()
	if err != nil {
		// A session row holds only strings, integers and attribute values,
		// which always encode; should one not, the records still go out.
		r.stats.WriteErrors++
		return
	}
	r.queue(sessions.Entry{Key: keys.Session(uint64(s.id)), Value: v})
}

// queueRecord appends a record's key and a copy of its value to the
// arena, and the entry to the batch; r.mu is held. Entries queued before
// the arena grew keep pointing into the array it outgrew, which stays
// theirs.
func (r *Recorder) queueRecord(kind string, session, seq uint64, value []byte) {
	r.takeSpare()
	start := len(r.arena)
	r.arena = keys.AppendRecord(r.arena, kind, session, seq)
	mid := len(r.arena)
	r.arena = append(r.arena, value...)
	end := len(r.arena)
	r.queue(sessions.Entry{Key: r.arena[start:mid:mid], Value: r.arena[mid:end:end]})
}
