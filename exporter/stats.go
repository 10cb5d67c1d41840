package exporter

import "github.com/otelrecords/otelrecords/internal/write/recorder"

// Stats counts what the exporter did, so a user can tell when records are
// dropped and why.
type Stats struct {
	// Written is how many records (not session rows) the store acknowledged.
	Written int64
	// Held is how many records are held in memory now, waiting for a change.
	Held int64
	// HeldBytes is how many bytes the held records count against the budget.
	HeldBytes int64
	// Evicted is how many held records the pending budget pushed out.
	Evicted int64
	// TracesSeen is how many traces had records under KeepByTrace. After
	// Shutdown, which decides every trace still held, TracesKept +
	// TracesDropped + TracesEvicted = TracesSeen; before it, the traces
	// held are the difference. A trace a late change keeps after it was
	// dropped counts again, as seen and kept.
	TracesSeen int64
	// TracesKept is how many traces were kept under KeepByTrace because
	// one of their records changed something.
	TracesKept int64
	// TracesDropped is how many traces were dropped under KeepByTrace
	// because their local root ended, and TraceGrace passed, with nothing
	// changed; or at Shutdown, which cuts the grace short and drops every
	// trace still held (none changed anything: a change keeps its trace
	// at once).
	TracesDropped int64
	// TracesEvicted is how many traces the pending budget pushed out under
	// KeepByTrace before they were decided (their records are counted in
	// Evicted).
	TracesEvicted int64
	// Invalid is how many records were refused for an invalid kind.
	Invalid int64
	// TooLarge is how many records were dropped because no store could
	// hold them (over 15 MiB encoded, or beyond what a reader decodes).
	TooLarge int64
	// WriteErrors is how many times opening or writing the store failed.
	WriteErrors int64
	// SessionsKept is 1 once the session is kept, else 0.
	SessionsKept int64
	// StoreOpens is how many times the store was opened.
	StoreOpens int64
	// BusyWaits is how many writes found the store held by another process
	// (a build, the records command) and waited for their turn: normal
	// operation, not an error, and not reported.
	BusyWaits int64
	// Pending is how many records wait to be written on the next Flush.
	Pending int64
	// Spooled is how many records were set aside in the store's spool
	// because another process held the store (past a write's wait, past
	// the memory bound, or at Shutdown), or because it failed writes
	// (SpooledUnwritable counts those); the next opener writes them.
	Spooled int64
	// Unwritable is how many records were dropped, oldest first, because
	// the store failed writes (a full disk, an I/O error, a read-only file
	// system) and its spool would not take them either, once 8 MiB of
	// records waited in memory (recorder.SpillBytes). Reported once per
	// failing streak.
	Unwritable int64
	// SpooledUnwritable is how many of the Spooled records went to the
	// spool because the store failed writes, not because it was busy.
	SpooledUnwritable int64
	// TrimmedSessions is how many other sessions were deleted to keep the
	// store within WithMaxBytes.
	TrimmedSessions int64
	// TrimmedRecords is how many of this session's own oldest records were
	// deleted to keep the store within WithMaxBytes.
	TrimmedRecords int64
	// StoreBytes is the store's size as WithMaxBytes counts it, after the
	// last write; 0 without WithMaxBytes or before the session is kept.
	StoreBytes int64
	// Dropped is how many ended spans were dropped because the queue was
	// full.
	Dropped int64
	// Problems is how many spans had invalid control attributes (recorded
	// anyway, as documented), may have lost records.effect to the
	// attribute limit (spanbridge.ErrAttributesDropped), or failed to
	// record.
	Problems int64
	// Queued is how many ended spans wait for the background goroutine.
	Queued int64
	// AttributesDropped is how many spans had attributes dropped by the
	// SDK's attribute limit (128 by default) before they reached us: their
	// records hold what was left (and say how many went).
	AttributesDropped int64
}

// Stats returns the exporter's counters.
func (e *Exporter) Stats() Stats {
	q := max(e.queue.n.Load(), 0)
	s := recorderStats(e.rec.Stats())
	s.Dropped, s.Problems, s.Queued, s.AttributesDropped = e.dropped.Load(), e.problems.Load(), q, e.cut.Load()
	return s
}

// recorderStats is what a session's Recorder counted, as Stats: the
// SpanProcessor's one session, or one of an Importer's.
func recorderStats(r recorder.Stats) Stats {
	return Stats{
		Written: r.Written, Held: r.Held, HeldBytes: r.HeldBytes, Evicted: r.Evicted,
		Invalid: r.Invalid, TooLarge: r.TooLarge, WriteErrors: r.WriteErrors,
		SessionsKept: r.SessionsKept, StoreOpens: r.StoreOpens, BusyWaits: r.BusyWaits, Pending: r.Pending,
		Spooled: r.Spooled, StoreBytes: r.StoreBytes,
		Unwritable: r.Unwritable, SpooledUnwritable: r.SpooledUnwritable,
		TrimmedSessions: r.TrimmedSessions, TrimmedRecords: r.TrimmedRecords,
		TracesSeen: r.TracesSeen, TracesKept: r.TracesKept, TracesDropped: r.TracesDropped, TracesEvicted: r.TracesEvicted,
	}
}
