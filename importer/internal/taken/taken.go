// Package taken holds, for an Importer that keeps no records (the
// Collector's records processor without a store of records), its taken
// entries: for each kept session, the fingerprints of the spans whose
// records it handed on, one entry a round of its loop under the session's
// seq after them (docs/FORMAT.md §12), so that a restart takes none of
// them twice within the dedup window. A fingerprint rather than an id: a
// third of the bytes through Badger.
package taken

import (
	"encoding/binary"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// RefBytes is what a taken entry holds for a span: its fingerprint.
const RefBytes = 8

// Queue is the taken entries waiting for the Importer's loop to write
// them, in one arena; spare is the arena of those it wrote last. The
// zero Queue is empty. It is not safe for concurrent use.
type Queue struct {
	arena, spare []byte
	bounds       [][3]int // each entry's key from [0] to [1], value to [2]
}

// maxArena is the largest arena of taken entries kept for a later round.
const maxArena = 4 << 20

// Add queues the taken entry of session id, under seq, of the spans of
// fingerprints fps.
func (q *Queue) Add(id, seq uint64, fps []uint64) {
	start := len(q.arena)
	q.arena = keys.AppendImportTakenAt(q.arena, id, seq)
	mid := len(q.arena)
	for _, fp := range fps {
		q.arena = binary.LittleEndian.AppendUint64(q.arena, fp)
	}
	q.bounds = append(q.bounds, [3]int{start, mid, len(q.arena)})
}

// Take returns the entries queued, and empties the queue. The entries'
// arena becomes the spare, which the Take after next reuses: the loop
// takes and writes them before it takes again, so the queue fills two
// arenas turn about rather than grow a new one a round.
func (q *Queue) Take() []sessions.Entry {
	if len(q.bounds) == 0 {
		return nil
	}
	out := make([]sessions.Entry, len(q.bounds))
	for i, b := range q.bounds {
		out[i] = sessions.Entry{Key: q.arena[b[0]:b[1]:b[1]], Value: q.arena[b[1]:b[2]:b[2]]}
	}
	next := q.spare[:0]
	if cap(next) > maxArena {
		next = nil // what a burst grew goes
	}
	q.arena, q.spare, q.bounds = next, q.arena, q.bounds[:0]
	return out
}

// Each calls f with each fingerprint of a taken entry's value v but the
// zero one (no span's).
func Each(v []byte, f func(fp uint64)) {
	for ; len(v) >= RefBytes; v = v[RefBytes:] {
		if fp := binary.LittleEndian.Uint64(v); fp != 0 {
			f(fp)
		}
	}
}
