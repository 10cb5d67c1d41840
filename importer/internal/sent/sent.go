// Package sent holds, for an Importer, the parts of tallies a sender's
// session was sent as spans (a records processor upstream hands its
// sessions' tallies on so, and `records replay` sends them so:
// docs/MAPPING.md §8.6): the newest version of each part, until the
// session it joins here is kept and writes it, as a part of that
// session's tally beside the one its own Recorder counts.
package sent

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// Held is the parts of tallies one session was sent. The zero Held holds
// none. It is not safe for concurrent use.
type Held struct {
	parts map[uint64]*held
}

// held is the newest version of a part: the part itself until it is
// written, and its count, which only grows from version to version.
type held struct {
	t       tallies.Tally
	count   int64
	written bool
}

// Take takes t, a part of the tally of the sender's session from, unless
// the version held counts as much: a version coming late does not
// replace a newer one.
func (h *Held) Take(from sessions.SessionID, t tallies.Tally) {
	part := Part(from, t.Part)
	if p := h.parts[part]; p != nil && p.count >= t.Count() {
		return
	}
	if h.parts == nil {
		h.parts = map[uint64]*held{}
	}
	t.Part = part
	h.parts[part] = &held{t: t, count: t.Count()}
}

// Unwritten returns the entries of the parts taken since it was last
// asked, as parts of session id's tally, and forgets them but their
// counts. A part that does not encode is left out, and the error
// returned with the others.
func (h *Held) Unwritten(id sessions.SessionID) ([]sessions.Entry, error) {
	var out []sessions.Entry
	var first error
	for part, p := range h.parts {
		if p.written {
			continue
		}
		p.t.Session = id
		v, err := p.t.MarshalCBOR()
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		out = append(out, sessions.Entry{Key: keys.Tally(uint64(id), part), Value: v})
		p.written, p.t = true, tallies.Tally{}
	}
	return out, first
}

// Part is the part under which a part of a tally sent by session from is
// written here: drawn from both (FNV-1a), so that it stays the same from
// version to version and across a restart, and is no part of the
// session's own Recorder, nor of another sender's.
func Part(from sessions.SessionID, part uint64) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(from))
	binary.BigEndian.PutUint64(b[8:], part)
	h.Write(b[:])
	return max(h.Sum64(), 1)
}
