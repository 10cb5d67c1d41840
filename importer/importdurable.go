package importer

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/importer/internal/ahead"
	"github.com/otelrecords/otelrecords/importer/internal/seen"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// What makes an acknowledgement durable beyond the records themselves
// (docs/FORMAT.md §12): for each kept session, a sender entry — whose
// session it is, where it stands — so that a restarted Importer continues
// it under its id and recognises the spans it took last; and each span of
// a kept session that waits for its parent, written ahead before the
// sender is told it is stored, emptied once its record is written.

// entryEvery is how often a kept session's sender entry is written again
// while its sender sends: when it was last heard of, to a few seconds.
const entryEvery = 5 * time.Second

// writeAhead makes the kept session rs durable beyond its records: its
// sender entry, when it was just kept or entryEvery has passed, and every
// span waiting for its parent that is not written ahead yet. They are
// queued in its Recorder, to be written with its records. im.mu is held.
func (im *Importer) writeAhead(rs *remoteSession, now time.Time) {
	if !rs.rec.Kept() {
		return
	}
	id, _, ok := rs.rec.Started()
	if !ok {
		return
	}
	im.writeEntry(rs, now, !rs.kept)
	rs.kept = true
	es, err := rs.tallies.Unwritten(id)
	for _, e := range es {
		rs.rec.QueueEntry(e)
	}
	if err != nil {
		im.reports.Once("tally", fmt.Errorf("otelrecords: importer: a tally cannot be written: %w", err))
	}
	im.writePending(rs, uint64(id))
	im.writeTaken(rs, uint64(id))
}

// writeEntry queues rs's sender entry, when force or entryEvery has
// passed since it last did. im.mu is held.
func (im *Importer) writeEntry(rs *remoteSession, now time.Time, force bool) {
	if !force && now.Sub(rs.entryAt) < entryEvery {
		return
	}
	id, start, ok := rs.rec.Started()
	if !ok {
		return
	}
	rs.entryAt = now
	next := rs.rec.NextSeq()
	rs.marks = append(rs.marks, ahead.SeqMark{At: now.UnixNano(), Seq: next})
	// Marks a thirty-second of the window apart at least (but the last):
	// a long window needs no mark every few seconds, and a restart reads
	// back from the mark before the window, a little earlier at worst.
	step := max(entryEvery, im.cfg.DedupWindow/32).Nanoseconds()
	if n := len(rs.marks); n >= 3 && rs.marks[n-2].At-rs.marks[n-3].At < step {
		rs.marks = append(rs.marks[:n-2], rs.marks[n-1])
	}
	// Keep the marks of the window, and the newest one before it, which
	// says where the window starts.
	from := now.Add(-im.cfg.DedupWindow).UnixNano()
	i := 0
	for i+1 < len(rs.marks) && rs.marks[i+1].At <= from {
		i++
	}
	rs.marks = append(rs.marks[:0], rs.marks[i:]...)
	e := ahead.SenderEntry{Key: rs.key, Start: start.UnixNano(), Skew: int64(rs.clock.Skew), Seen: rs.last.UnixNano(),
		NextSeq: next, NextPending: rs.nextPending, Marks: rs.marks, Resource: rs.resource}
	v, err := cbor.Marshal(e)
	if err != nil {
		im.reports.Once("entry", fmt.Errorf("otelrecords: importer: sender entry: %w", err))
		return
	}
	rs.rec.QueueEntry(sessions.Entry{Key: keys.ImportSender(uint64(id)), Value: v})
}

// recover reads back what a previous run of an Importer on this store
// left: the sessions whose sender was heard from within the session
// timeout or the dedup window, continued when their senders come back
// (or, once ended, when a span of theirs comes late), with the spans they
// took in the last dedup window so that a replay is taken once; and the
// spans written ahead that were not recorded, placed again in their
// sessions. Older sessions' entries are deleted. It runs once, before
// the first Import; a store another process holds is waited for until
// ctx ends, and tried again at the next Import. im.mu is held.
func (im *Importer) recover(ctx context.Context) error {
	if im.recovered {
		return nil
	}
	if im.writer != nil && !badgerstore.Exists(im.dir) {
		im.recovered = true
		return nil
	}
	now := im.now()
	err := im.onStore(ctx, func(st sessions.Store) error {
		if err := im.loadKey(st); err != nil {
			return err
		}
		found, err := readEntries(st)
		if err != nil {
			return err
		}
		rd := sessions.NewRecords(st)
		kinds, err := rd.Kinds()
		if err != nil {
			return err
		}
		// Oldest first: of two sessions of one sender, the later is the
		// one its spans continue.
		ids := slices.SortedFunc(maps.Keys(found), func(a, b uint64) int { return cmp.Compare(found[a].entry.Seen, found[b].entry.Seen) })
		for _, id := range ids {
			f := found[id]
			old := now.Sub(time.Unix(0, f.entry.Seen)) >= im.remembered()
			if old && len(f.pending) == 0 {
				if err := ahead.Delete(st, id); err != nil {
					return err
				}
				continue
			}
			p, err := im.resumed(st, rd, kinds, id, f, now)
			if err != nil {
				return err
			}
			im.counts.recovered++
			if old {
				p.last = now // long quiet, but it left spans to record: record them, then end
			}
			if prev, ok := im.parked[f.entry.Key]; ok && prev.id != p.id {
				im.retired = append(im.retired, retiredEntry{id: uint64(prev.id), last: prev.last})
			}
			im.parked[f.entry.Key] = p
			if len(p.pending) > 0 {
				// Spans a sender was told are stored: record them even if
				// the sender never comes back.
				key := f.entry.Key
				rs := im.sessionFor(key, im.seen.Salt(key), p.res, nil, now)
				rs.last = p.last
				im.settleAll(rs, now)
				im.account(rs)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("otelrecords: importer: reading back what the last run left in %s: %w", im.dir, err)
	}
	im.recovered = true
	return nil
}

// foundEntry is a session's sender entry and pending spans, as read back.
type foundEntry struct {
	entry       ahead.SenderEntry
	pending     []*pendingSpan
	nextPending uint64
	// fromSeq is the least seq the session was at when a pending entry
	// still holding spans was written: a span of it recorded since has a
	// seq from there on (pendingSeq says there is one).
	fromSeq    uint64
	pendingSeq bool
}

// readEntries reads every sender entry and pending span of the store.
func readEntries(st sessions.Store) (map[uint64]*foundEntry, error) {
	found := map[uint64]*foundEntry{}
	for e, err := range st.Scan(keys.NamespaceStart(keys.ImportSenders), keys.NamespaceEnd(keys.ImportSenders)) {
		if err != nil {
			return nil, err
		}
		id, _, err := keys.ParseImportKey(e.Key)
		if err != nil {
			continue
		}
		var se ahead.SenderEntry
		if cbor.Unmarshal(e.Value, &se) != nil {
			continue
		}
		found[id] = &foundEntry{entry: se}
	}
	for e, err := range st.Scan(keys.NamespaceStart(keys.ImportPending), keys.NamespaceEnd(keys.ImportPending)) {
		if err != nil {
			return nil, err
		}
		id, n, err := keys.ParseImportKey(e.Key)
		f := found[id]
		if err != nil || f == nil {
			continue
		}
		f.nextPending = max(f.nextPending, n)
		if len(e.Value) == 0 {
			continue // recorded
		}
		spans, seq, err := decodePending(e.Value)
		if err != nil {
			continue
		}
		for _, p := range spans {
			p.entry = n
		}
		f.pending = append(f.pending, spans...)
		if !f.pendingSeq || seq < f.fromSeq {
			f.pendingSeq, f.fromSeq = true, seq
		}
	}
	return found, nil
}

// resumed makes the parked session that continues session id: its seq
// past every record it wrote, and the spans it took since the mark a
// dedup window before its sender was last heard of, remembered again.
func (im *Importer) resumed(st sessions.Store, rd *sessions.Records, kinds []string, id uint64, f *foundEntry, now time.Time) (*parkedSession, error) {
	e := f.entry
	p := &parkedSession{id: sessions.SessionID(id), start: time.Unix(0, e.Start), clock: senderClock{Skew: time.Duration(e.Skew)},
		next: e.NextSeq, last: time.Unix(0, e.Seen), marks: e.Marks, pending: f.pending,
		nextPending: max(e.NextPending, f.nextPending), res: spanbridge.Attributes(e.Resource), recovered: true}
	from := uint64(0)
	window := time.Unix(0, e.Seen).Add(-im.cfg.DedupWindow).UnixNano()
	for _, m := range e.Marks {
		if m.At <= window {
			from = m.Seq
		}
	}
	if f.pendingSeq {
		from = min(from, f.fromSeq)
	}
	salt, at := im.seen.Salt(e.Key), im.second(now)
	for _, kind := range kinds {
		for r, err := range rd.All(kind, sessions.InSessionFrom(sessions.SessionID(id), from)) {
			if err != nil {
				return nil, err
			}
			p.next = max(p.next, r.Stamp.Seq+1)
			if k := (spanRef{Trace: trace.TraceID(r.Record.TraceID), Span: trace.SpanID(r.Record.SpanID)}); k.Span.IsValid() {
				im.seen.Set(im.seen.Fingerprint(salt, k), seen.Placed, at)
			}
		}
	}
	// An Importer that keeps no records reads the ids of those it handed
	// on.
	next, err := im.readTaken(st, id, from, at)
	if err != nil {
		return nil, err
	}
	p.next = max(p.next, next)
	// A pending entry holds spans written ahead together: those of them
	// recorded before the entry was emptied are taken, and left out.
	p.pending = slices.DeleteFunc(p.pending, func(ps *pendingSpan) bool {
		return im.seen.State(im.seen.Fingerprint(salt, spanRef{Trace: ps.span.TraceID, Span: ps.span.SpanID})) == seen.Placed
	})
	for _, ps := range p.pending {
		ps.arrived = now
		ps.order = im.arrivals()
	}
	return p, nil
}
