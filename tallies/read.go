package tallies

import (
	"bytes"
	"fmt"
	"iter"
	"slices"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Of returns the part of a tally a store's entry holds: the session and
// part its key names, decoded; false for any other key, for a reader
// walking a store's entries.
func Of(e sessions.Entry) (Tally, bool, error) {
	id, part, ok := keys.ParseTally(e.Key)
	if !ok {
		return Tally{}, false, nil
	}
	t, err := Decode(e.Value)
	if err != nil {
		return Tally{}, true, err
	}
	if uint64(t.Session) != id || t.Part != part {
		return Tally{}, true, fmt.Errorf("tally of session %d part %d under the key of session %d part %d", t.Session, t.Part, id, part)
	}
	return t, true, nil
}

// Read returns the tally of session id in the store r reads, its parts
// summed (Part 0), and false when the store holds none: a session kept
// by a writer that did not count what it let go, or no session. A part
// that does not decode, or disagrees with its key, is skipped and counted
// in r.Skipped, as r skips a record that does not decode.
func Read(r *sessions.Records, id sessions.SessionID) (Tally, bool, error) {
	t := Tally{Session: id}
	found := false
	for p, err := range Parts(r, id) {
		if err != nil {
			return Tally{}, false, err
		}
		if !found {
			p.Part = 0
			t, found = p, true
			t.Entries = slices.Clone(p.Entries)
			continue
		}
		t.Merge(p)
		t.Part = 0
	}
	return t, found, nil
}

// Parts yields the parts of session id's tally in the store r reads, as
// written (each with its Part), in the order of their parts. A part that
// does not decode, or disagrees with its key, is skipped and counted in
// r.Skipped. Read sums them.
func Parts(r *sessions.Records, id sessions.SessionID) iter.Seq2[Tally, error] {
	prefix := keys.TallyPrefix(uint64(id))
	end := append(bytes.Clone(prefix[:len(prefix)-1]), prefix[len(prefix)-1]+1)
	return sessions.ReadValues(r, prefix, end, Of)
}

// Put writes a part of a tally into the store r reads, as it is, under its session and
// part (keys.Tally), replacing the part the store holds: how a tally read
// elsewhere (`records pull`, from a backend a records processor handed it
// to) is written back. Nothing is written when the part is one no reader
// takes (the error wraps sessions.ErrTooLarge): larger than MaxBytes, or
// past a reader's limits. It stamps nothing and writes no session row.
func Put(r *sessions.Records, t Tally) error {
	v, err := t.MarshalCBOR()
	if err != nil {
		return fmt.Errorf("otelrecords: tally of session %d part %d: %w", t.Session, t.Part, err)
	}
	if len(v) > MaxBytes {
		return fmt.Errorf("otelrecords: tally of session %d part %d: %w: %d bytes, over the %d a writer writes", t.Session, t.Part, sessions.ErrTooLarge, len(v), MaxBytes)
	}
	if _, err := Decode(v); err != nil {
		return fmt.Errorf("otelrecords: tally of session %d part %d: %w: a reader would not decode it: %v", t.Session, t.Part, sessions.ErrTooLarge, err)
	}
	return r.Store().Write([]sessions.Entry{{Key: keys.Tally(uint64(t.Session), t.Part), Value: v}})
}
