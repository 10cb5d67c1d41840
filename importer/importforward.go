package importer

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/otelrecords/otelrecords/importer/internal/ahead"
	"github.com/otelrecords/otelrecords/importer/internal/handed"
	"github.com/otelrecords/otelrecords/importer/internal/seen"
	"github.com/otelrecords/otelrecords/importer/internal/taken"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// An Importer that hands its records on and keeps none
// (Config.ForwardOnly: the Collector's records processor without
// a store) still keeps, in a store of its own, what it needs to take a
// batch once across a restart and continue its senders' sessions under
// their ids: the sender entries and the spans written ahead, as any
// Importer does, and, since it has no records to read back, taken
// entries — the fingerprints of the records it handed on (seenTable),
// one entry a round for each session, under the session's seq after
// them — and the key they are hashed under. A restart reads back those of
// the dedup window; older ones are deleted as the window moves on.
// Fingerprints rather than ids: a third of the bytes through Badger,
// whose tables of them cost the processor more CPU than anything it
// writes.

// sink is where a session's Recorder gives what it wrote
// (recorder.Sink): with Config.Forward, a handed.Sink, which hands it on
// and then writes it (a store given with WithStore is the caller's, and
// is written as it is); without it, nil, and the Recorder writes to the
// shared writer itself.
func (im *Importer) sink() recorder.Sink {
	if im.writer == nil || im.cfg.Forward == nil {
		return nil
	}
	return &handed.Sink{W: im.writer, Forward: im.cfg.Forward, Only: im.cfg.ForwardOnly}
}

// openFor returns how the Recorder of a session whose sink is s opens
// the store: with a handed.Sink, a store whose spool (the Recorder's last
// resort for what it could not write) hands on through the sink first.
func (im *Importer) openFor(s recorder.Sink) func() (sessions.Store, error) {
	hs, ok := s.(*handed.Sink)
	if !ok {
		return im.open
	}
	return func() (sessions.Store, error) { return forwardSession{sharedSession{im.writer}, hs}, nil }
}

// forwardSession is the shared writer as a forwarding session's Recorder
// sees it: its spool is the sink's.
type forwardSession struct {
	sharedSession
	sink *handed.Sink
}

// Spool hands es on, then sets them aside (handed.Sink.Spool).
func (s forwardSession) Spool(es []sessions.Entry) error { return s.sink.Spool(es) }

// tookRecord notes, for an Importer that keeps no records, that the span
// of fingerprint fp of the kept session rs is recorded: its id goes in the session's
// next taken entry. The records a session holds before it is kept are
// handed on when it is, without their ids: after a restart, one of them
// delivered again is handed on again (downstream takes a span at least
// once). im.mu is held.
func (im *Importer) tookRecord(rs *remoteSession, fp uint64) {
	if im.cfg.ForwardOnly && rs.rec.Kept() {
		rs.taken = append(rs.taken, fp)
	}
}

// writeTaken queues the taken entry of the spans rs recorded since the
// last, under the seq after them, for the loop to write (writeQueued).
// Their records are handed on first, before the sender is told; the ids
// follow within a round of the loop: a crash between, as one between
// handing on and writing, hands them on again if they are sent again.
// Written apart from the records, a round's ids go in one write, not one
// for each request. im.mu is held.
func (im *Importer) writeTaken(rs *remoteSession, id uint64) {
	if len(rs.taken) == 0 {
		return
	}
	im.takenQueue.Add(id, rs.rec.NextSeq(), rs.taken)
	rs.taken = rs.taken[:0]
}

// writeQueued writes the taken entries the loop took. A store that
// refuses them loses them, reported: a span among them sent again after
// a restart is handed on again.
func (im *Importer) writeQueued(ctx context.Context, es []sessions.Entry) {
	if len(es) == 0 {
		return
	}
	im.mu.Lock()
	if !im.keySaved {
		// The fingerprints are of no use after a restart without their
		// key: it goes first.
		es = append([]sessions.Entry{{Key: []byte(keys.ImportHashKey), Value: im.seen.Key().Bytes()}}, es...)
	}
	im.mu.Unlock()
	err := im.onStore(ctx, func(st sessions.Store) error { return st.Write(es) })
	im.handle("taken", err)
	if err == nil {
		im.mu.Lock()
		im.keySaved = true
		im.mu.Unlock()
	}
}

// loadKey takes, for an Importer that keeps no records, the key the
// fingerprints in st are hashed under, or keeps its own to write with the
// first (keySaved). Before anything is fingerprinted. im.mu is held.
func (im *Importer) loadKey(st sessions.Store) error {
	if !im.cfg.ForwardOnly {
		return nil
	}
	for e, err := range st.Scan([]byte(keys.ImportHashKey), append([]byte(keys.ImportHashKey), 0)) {
		if err != nil {
			return err
		}
		if string(e.Key) == keys.ImportHashKey && len(e.Value) == seen.HashKeyBytes {
			im.seen.SetKey(seen.HashKeyOf(e.Value))
			im.keySaved = true
		}
	}
	return nil
}

// readTaken remembers the spans of session id's taken entries from seq
// from on, and returns the highest seq they are
// under: the session's next record comes after it.
func (im *Importer) readTaken(st sessions.Store, id, from uint64, at uint32) (uint64, error) {
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
		taken.Each(e.Value, func(fp uint64) { im.seen.Set(fp, seen.Placed, at) })
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
	cutOf := func(marks []ahead.SeqMark) uint64 {
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

// fillFor returns what any failed flush of rs gives each entry still
// queued (recorder.Config.Fill): a record an Import in flight queued
// unencoded gets its value, encoded from its span as record encodes a
// plain span (the Collector forgets a note as it hands its span on).
func (im *Importer) fillFor(rs *remoteSession) func(*sessions.Entry) {
	if !im.cfg.ForwardOnly || im.cfg.AsReceived == nil {
		return nil
	}
	return im.imports.Fill(rs, func(s *Span, st sessions.Stamp) (_ []byte, err error) {
		defer func() { // as record's: a panic encoding one span is reported, not the Collector's end
			if p := recover(); p != nil {
				err = fmt.Errorf("encoding span %q panicked: %v", cut(s.Name, 64), p)
			}
		}()
		var w scratchSpace
		w.view.set(s)
		enc := intake.EncodeRecord(&w.Scratch, &w.view, sessions.LevelBasic, -1, st)
		return w.Buf, enc.Err
	}, func(err error) { im.reports.Once("record", err) })
}
