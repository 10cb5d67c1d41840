package importer

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A part of a tally that reaches an Importer as a span (a records
// processor upstream hands its sessions' tallies on so, and `records
// replay` sends them so: docs/MAPPING.md §8.6) is the part again, not a
// record: written under the session it joins here, as its records are,
// once that session is kept, as a part of the session's tally beside the
// one its own Recorder counts.

// heldTally is the newest version of a part of a tally a session was
// sent: the part itself until it is queued, and its count, which only
// grows from version to version.
type heldTally struct {
	t       sessions.Tally
	count   int64
	written bool
}

// tallySpan reports whether s, of a batch under the Resource res, is a
// part of a tally, and if so takes it into rs: a newer version than the
// session holds replaces it, an older one or the same is dropped. A span
// that says it is a tally's but carries none that decodes is dropped and
// reported. im.mu is held.
func (im *Importer) tallySpan(rs *remoteSession, res []attribute.KeyValue, s *Span) bool {
	if s.Name != spanbridge.TallyName || !spanbridge.IsTallySpan(s.Name, s.Attributes) {
		return false
	}
	from, _, err := spanbridge.FromResource(res)
	if err != nil {
		return false // no session says whose it is: a span as any other
	}
	t, _, err := spanbridge.FromTallySpan(from.ID, s.Name, s.Attributes)
	if err != nil {
		rs.problems++
		im.reports.Once("tally", fmt.Errorf("otelrecords: importer: a tally's span dropped: %w", err))
		return true
	}
	part := tallyPart(from.ID, t.Part)
	if h := rs.tallies[part]; h != nil && h.count >= t.Count() {
		return true
	}
	if rs.tallies == nil {
		rs.tallies = map[uint64]*heldTally{}
	}
	t.Part = part
	rs.tallies[part] = &heldTally{t: t, count: t.Count()}
	return true
}

// tallyPart is the part under which a part of a tally sent by session
// from is written here: drawn from both, so that it stays the same from
// version to version, and across a restart, and is no part of the
// session's own Recorder (nor of another sender's).
func tallyPart(from sessions.SessionID, part uint64) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(from))
	binary.BigEndian.PutUint64(b[8:], part)
	h.Write(b[:])
	return max(h.Sum64(), 1)
}

// writeTallies queues the parts of tallies the kept session rs, of id,
// was sent and has not written, to be written with its records. im.mu
// is held.
func (im *Importer) writeTallies(rs *remoteSession, id sessions.SessionID) {
	for part, h := range rs.tallies {
		if h.written {
			continue
		}
		h.t.Session = id
		v, err := h.t.MarshalCBOR()
		if err != nil {
			im.reports.Once("tally", fmt.Errorf("otelrecords: importer: a tally cannot be written: %w", err))
			continue
		}
		rs.rec.QueueEntry(sessions.Entry{Key: keys.Tally(uint64(id), part), Value: v})
		h.written, h.t = true, sessions.Tally{}
	}
}
