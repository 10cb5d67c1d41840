package recorder

import (
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// Stats counts what a session's writing did, so a user can tell when
// records are dropped and why. It is the one counting type of both entry
// points: the Recorder fills what it counts, and the entry point that
// feeds it (the SpanProcessor, the Importer) the fields it counts itself
// (Dropped, Problems, Queued, AttributesDropped). exporter.Stats is this
// type, and an Importer's counters embed it, so a counter is declared
// once, here, and summed once, in Add.
type Stats struct {
	// Written is how many records (not session rows) the store acknowledged.
	Written int64
	// Held is how many records are held in memory now, waiting for a change.
	Held int64
	// HeldBytes is how many bytes the held records count against the budget.
	HeldBytes int64
	// Evicted is how many held records the pending budget pushed out.
	Evicted int64
	// TracesSeen is how many traces had records under KeepByTrace: each
	// is kept, dropped or evicted, so that once Close (an entry point's
	// Shutdown) has decided the traces still held, TracesKept +
	// TracesDropped + TracesEvicted = TracesSeen (before it, the traces
	// held are the difference). A
	// trace that a late change keeps after it was dropped or evicted
	// counts again, as seen and kept.
	TracesSeen int64
	// TracesKept is how many traces were kept under KeepByTrace because
	// one of their records changed something.
	TracesKept int64
	// TracesDropped is how many traces were dropped under KeepByTrace
	// because their root ended, and TraceGrace passed, with nothing
	// changed; or, at Close, because they were still held, undecided,
	// having changed nothing (the grace cut short).
	TracesDropped int64
	// TracesEvicted is how many held traces the pending budget pushed out
	// before they were decided (their records are counted in Evicted).
	TracesEvicted int64
	// Tallied is how many records keep-what-changed let go were counted
	// in the session's tally (docs/FORMAT.md §3.6): held records the
	// pending budget pushed out, the records of traces dropped or evicted,
	// implicit marks let go. The tally is written only if the session is
	// kept.
	Tallied int64
	// Invalid is how many records were refused for an invalid kind.
	Invalid int64
	// TooLarge is how many records were dropped because no store could
	// hold them (see MaxRecordSize and ErrTooLarge).
	TooLarge int64
	// WriteErrors is how many times opening or writing the store failed.
	WriteErrors int64
	// SessionsKept is 1 once the session is kept, else 0.
	SessionsKept int64
	// StoreOpens is how many times the store was opened.
	StoreOpens int64
	// Pending is how many records wait to be written on the next Flush.
	Pending int64
	// BusyWaits is how many times a write found the store held by another
	// process and waited for it: normal operation, not an error.
	BusyWaits int64
	// Spooled is how many records were set aside in the store's spool
	// because another process held the store past a write's wait, or
	// when the batch reached SpillBytes, or at Close — or because the
	// store failed writes (SpooledUnwritable counts those); the next
	// opener writes them.
	Spooled int64
	// FirstSpoolWait is how long the first write that spooled records
	// because another process held the store had waited for it.
	FirstSpoolWait time.Duration
	// SpooledUnwritable is how many of the Spooled records went to the
	// spool because the store failed writes (a full disk, an I/O error, a
	// read-only file system) while SpillBytes of records waited.
	SpooledUnwritable int64
	// Unwritable is how many records were dropped, oldest first, because
	// the store failed writes and its spool would not take them either,
	// while SpillBytes of records waited in memory: what keeps memory
	// bounded whatever the disk does.
	Unwritable int64
	// TrimmedSessions is how many other sessions were deleted to keep the
	// store within MaxBytes (exporter.WithMaxBytes).
	TrimmedSessions int64
	// TrimmedRecords is how many of this session's own records were
	// deleted to keep the store within MaxBytes, oldest first.
	TrimmedRecords int64
	// StoreBytes is the store's size as MaxBytes counts it, after the last
	// write: 0 without MaxBytes, or before the session is kept.
	StoreBytes int64

	// The entry point's own counters; a Recorder leaves them 0.

	// Dropped is how many ended spans were dropped because the
	// SpanProcessor's queue was full.
	Dropped int64
	// Problems is how many spans had invalid control attributes (recorded
	// anyway, as documented), may have lost records.effect to the
	// attribute limit (spanbridge.ErrAttributesDropped), or failed to
	// record.
	Problems int64
	// Queued is how many ended spans wait for the SpanProcessor's
	// background goroutine.
	Queued int64
	// AttributesDropped is how many spans had attributes dropped by their
	// SDK's attribute limit (128 by default) before they reached us: their
	// records hold what was left (and say how many went).
	AttributesDropped int64
}

// Add adds what o counted to s: what several sessions sharing one writer
// counted, summed (an Importer's, one session per sender). Every counter
// is summed but the writer's own (StoreOpens, BusyWaits, FirstSpoolWait,
// StoreBytes), which each session reports whole for the one writer they
// share: those take the larger.
func (s *Stats) Add(o Stats) {
	s.Written += o.Written
	s.Held += o.Held
	s.HeldBytes += o.HeldBytes
	s.Evicted += o.Evicted
	s.TracesSeen += o.TracesSeen
	s.TracesKept += o.TracesKept
	s.TracesDropped += o.TracesDropped
	s.TracesEvicted += o.TracesEvicted
	s.Tallied += o.Tallied
	s.Invalid += o.Invalid
	s.TooLarge += o.TooLarge
	s.WriteErrors += o.WriteErrors
	s.SessionsKept += o.SessionsKept
	s.StoreOpens = max(s.StoreOpens, o.StoreOpens)
	s.Pending += o.Pending
	s.BusyWaits = max(s.BusyWaits, o.BusyWaits)
	s.Spooled += o.Spooled
	s.FirstSpoolWait = max(s.FirstSpoolWait, o.FirstSpoolWait)
	s.SpooledUnwritable += o.SpooledUnwritable
	s.Unwritable += o.Unwritable
	s.TrimmedSessions += o.TrimmedSessions
	s.TrimmedRecords += o.TrimmedRecords
	s.StoreBytes = max(s.StoreBytes, o.StoreBytes)
	s.Dropped += o.Dropped
	s.Problems += o.Problems
	s.Queued += o.Queued
	s.AttributesDropped += o.AttributesDropped
}

// Stats returns the recorder's counters.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	if bs, ok := r.store.(BusyStore); ok {
		ss := bs.StoreStats()
		s.StoreOpens, s.BusyWaits, s.FirstSpoolWait = ss.Opens, ss.BusyWaits, ss.FirstSpoolWait
	}
	s.Tallied = r.tally.Count()
	s.Held = int64(r.held.Len() + r.traces.records)
	s.HeldBytes = int64(r.held.Counted() + r.traces.counted)
	for _, e := range r.batch {
		if keys.IsRecord(e.Key) {
			s.Pending++
		}
	}
	return s
}
