package importer

import "github.com/otelrecords/otelrecords/internal/write/recorder"

// Stats returns what the Importer counted, over its sessions in progress
// and those that ended.
func (im *Importer) Stats() Stats {
	im.mu.Lock()
	defer im.mu.Unlock()
	st := Stats{Stats: im.ended, Sessions: len(im.sessions), HeldBytes: int64(im.held),
		Accepted: im.counts.accepted, Duplicates: im.counts.duplicates, Rejected: im.counts.rejected,
		Refused: im.counts.refused, Late: im.counts.late, Resumed: im.counts.resumed, Recovered: im.counts.recovered,
		SeenSpans: int64(im.seen.Len()), SeenBytes: int64(im.seen.Bytes()), ForgottenEarly: im.seen.Forgotten()}
	now := im.now()
	for _, p := range im.parked {
		if now.Sub(p.last) < im.cfg.SessionTimeout {
			st.Parked++
		} else {
			st.Ended++
		}
	}
	for _, rs := range im.sessions {
		st.Stats.Add(rs.stats())
		st.HeldSpans += int64(rs.pendingSpans)
		st.HeldSpanBytes += int64(rs.pendingBytes)
	}
	return st
}

// Stats counts what an Importer did: the SpanProcessor's
// counters, summed over its sessions, and what only an Importer does.
// Every span given to Import is in exactly one of Accepted, Rejected and
// Refused; of the accepted, Duplicates were taken before, and the others
// are recorded (Written, Spooled), held (Held, HeldSpans), or were let go
// by the rules (Evicted, TracesDropped, the marks policy).
type Stats struct {
	recorder.Stats
	// Accepted is how many spans Import took, Duplicates among them.
	Accepted int64
	// Duplicates is how many accepted spans had been taken already (a
	// retry, a replay, a span repeated within a batch): recorded once.
	Duplicates int64
	// Rejected is how many spans had no valid trace id or span id.
	Rejected int64
	// Refused is how many spans Import refused because the store refused
	// writes (ErrRefused): the sender was told to retry.
	Refused int64
	// Sessions is how many remote sessions are in memory.
	Sessions int
	// Parked is how many kept sessions were let go while quiet and will
	// continue under their id when their sender comes back.
	Parked int
	// Ended is how many kept sessions ended (their sender quiet for the
	// session timeout) within the dedup window: a span of one that comes
	// late joins it again.
	Ended int
	// HeldSpans is how many spans wait for their parents (or, for an
	// implicit mark, for a record inside it).
	HeldSpans int64
	// HeldSpanBytes is what those spans count against
	// Config.HeldBytes.
	HeldSpanBytes int64
	// HeldBytes is everything held in memory over every session, as
	// Config.HeldBytes counts it.
	HeldBytes int64
	// Late is how many spans arrived after their parent was recorded.
	Late int64
	// Resumed is how many times a session let go continued under its id.
	Resumed int64
	// Recovered is how many sessions a previous run of an Importer on the
	// same store left in progress, read back at start.
	Recovered int64
	// SeenSpans is how many spans the Importer remembers to take each
	// once: those placed within the dedup window, and those a record was
	// placed below before they came. A span still waiting for its parent
	// is counted in HeldSpans, and known by its trace.
	SeenSpans int64
	// SeenBytes is the memory remembering them takes, within
	// Config.DedupBytes.
	SeenBytes int64
	// ForgottenEarly is how many spans were forgotten before the dedup
	// window passed, to keep within Config.DedupBytes: a span
	// among them delivered again would be stored again.
	ForgottenEarly int64
}
