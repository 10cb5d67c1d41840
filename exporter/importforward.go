package exporter

import (
	"bytes"
	"context"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// An Importer that hands its records on and keeps none
// (ImporterConfig.ForwardOnly: the Collector's records processor without
// a store) still keeps, in a store of its own, what it needs to take a
// batch once across a restart and continue its senders' sessions under
// their ids: the sender entries and the spans written ahead, as any
// Importer does, and, since it has no records to read back, taken
// entries — the trace and span ids of the records it handed on, one
// entry for each round's, under the session's seq after them. A restart
// reads back those of the dedup window; older ones are deleted as the
// window moves on.

// takenRefBytes is what a taken entry holds for a span: its trace id and
// span id.
const takenRefBytes = 24

// forwardOnlySession is the shared writer of a session whose records are
// handed on (ImporterConfig.Forward) and not kept: the entries are handed
// on, then the Importer's own among them are written. A crash between the
// two hands the records on again when the sender, not told they are
// stored, sends them again: downstream takes a span at least once.
type forwardOnlySession struct {
	sharedSession
	forward func([]sessions.Entry) error
}

// own returns the Importer's own entries among es.
func own(es []sessions.Entry) []sessions.Entry {
	var out []sessions.Entry
	for _, e := range es {
		if bytes.HasPrefix(e.Key, []byte(keys.ImportRoot)) {
			out = append(out, e)
		}
	}
	return out
}

// WriteContext hands the entries on, then writes the Importer's own.
func (f forwardOnlySession) WriteContext(ctx context.Context, es []sessions.Entry) (int, error) {
	if err := f.forward(es); err != nil {
		return 0, err
	}
	if mine := own(es); len(mine) > 0 {
		return f.sharedSession.WriteContext(ctx, mine)
	}
	return 0, nil
}

// Write hands the entries on, then writes the Importer's own.
func (f forwardOnlySession) Write(es []sessions.Entry) error {
	if err := f.forward(es); err != nil {
		return err
	}
	if mine := own(es); len(mine) > 0 {
		return f.sharedSession.Write(mine)
	}
	return nil
}

// tookRecord notes, for an Importer that keeps no records, that the span
// ref of rs is recorded: its id goes in the session's next taken entry.
// im.mu is held.
func (im *Importer) tookRecord(rs *remoteSession, ref spanRef) {
	if im.cfg.ForwardOnly {
		rs.taken = append(rs.taken, ref)
	}
}

// writeTaken queues the taken entry of the spans rs recorded since the
// last, under the seq after them. im.mu is held.
func (im *Importer) writeTaken(rs *remoteSession, id uint64) {
	if len(rs.taken) == 0 {
		return
	}
	v := make([]byte, 0, len(rs.taken)*takenRefBytes)
	for _, r := range rs.taken {
		v = append(append(v, r.trace[:]...), r.span[:]...)
	}
	rs.rec.QueueEntry(sessions.Entry{Key: keys.ImportTakenAt(id, rs.rec.NextSeq()), Value: v})
	rs.taken = rs.taken[:0]
}

// readTaken remembers the spans of session id's taken entries from seq
// from on (salt is its sender's), and returns the highest seq they are
// under: the session's next record comes after it.
func (im *Importer) readTaken(st sessions.Store, id, from, salt uint64, at uint32) (uint64, error) {
	start, end := keys.ImportTakenRange(id)
	next := uint64(0)
	for e, err := range st.Scan(keys.ImportTakenAt(id, from), end) {
		if err != nil {
			return 0, err
		}
		if !bytes.HasPrefix(e.Key, start) {
			continue
		}
		_, seq, err := keys.ParseImportKey(e.Key)
		if err != nil {
			continue
		}
		next = max(next, seq)
		for v := e.Value; len(v) >= takenRefBytes; v = v[takenRefBytes:] {
			var ref spanRef
			copy(ref.trace[:], v[:16])
			copy(ref.span[:], v[16:takenRefBytes])
			if ref.span.IsValid() && ref.trace.IsValid() {
				im.seen.set(im.seen.fingerprint(salt, ref), statePlaced, at)
			}
		}
	}
	return next, nil
}

// takenBefore returns, for an Importer that keeps no records, the taken
// entries to delete now: for each kept session it remembers, those of
// spans recorded before the mark a dedup window old. im.mu is held.
func (im *Importer) takenBefore(now time.Time) []takenCut {
	if !im.cfg.ForwardOnly {
		return nil
	}
	window := now.Add(-im.cfg.DedupWindow).UnixNano()
	cutOf := func(marks []seqMark) uint64 {
		cut := uint64(0)
		for _, m := range marks {
			if m.At <= window {
				cut = m.Seq
			}
		}
		return cut
	}
	var out []takenCut
	for _, rs := range im.sessions {
		if id, _, ok := rs.rec.Started(); ok && rs.kept {
			if cut := cutOf(rs.marks); cut > 0 {
				out = append(out, takenCut{uint64(id), cut})
			}
		}
	}
	for _, p := range im.parked {
		if cut := cutOf(p.marks); cut > 0 {
			out = append(out, takenCut{uint64(p.id), cut})
		}
	}
	return out
}

// takenCut is a session's taken entries to delete: those below seq.
type takenCut struct{ id, seq uint64 }

// deleteTaken deletes the taken entries below each cut.
func (im *Importer) deleteTaken(ctx context.Context, cuts []takenCut) error {
	return im.onStore(ctx, func(st sessions.Store) error {
		for _, c := range cuts {
			start, _ := keys.ImportTakenRange(c.id)
			if _, err := st.DeleteRange(start, keys.ImportTakenAt(c.id, c.seq), nil); err != nil {
				return err
			}
		}
		return nil
	})
}
