package sessions

import (
	"bytes"
	"fmt"
	"iter"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// TallyParts returns the parts of session id's tally the store holds, as
// written (each with its Part), in the order of their parts. A part that
// does not decode, or disagrees with its key, is skipped and counted
// (Skipped). Records.Tally sums them.
func (r *Records) TallyParts(id SessionID) iter.Seq2[Tally, error] {
	return func(yield func(Tally, error) bool) {
		prefix := keys.TallyPrefix(uint64(id))
		end := append(bytes.Clone(prefix[:len(prefix)-1]), prefix[len(prefix)-1]+1)
		for e, err := range r.store.Scan(prefix, end) {
			if err != nil {
				yield(Tally{}, err)
				return
			}
			t, ok, err := TallyEntryOf(e)
			if !ok {
				continue
			}
			if err != nil {
				r.skipped.Add(1)
				continue
			}
			if !yield(t, nil) {
				return
			}
		}
	}
}

// PutTally writes a part of a tally into the store as it is, under its
// session and part (keys.Tally), replacing the part the store holds: how
// a tally read elsewhere (`records pull`, from a backend a records
// processor handed it to) is written back. Nothing is written when the
// part is one no reader takes (the error wraps ErrTooLarge): larger than
// MaxTallyBytes, or past a reader's limits. It stamps nothing and writes
// no session row.
func (r *Records) PutTally(t Tally) error {
	v, err := t.MarshalCBOR()
	if err != nil {
		return fmt.Errorf("otelrecords: tally of session %d part %d: %w", t.Session, t.Part, err)
	}
	if len(v) > MaxTallyBytes {
		return fmt.Errorf("otelrecords: tally of session %d part %d: %w: %d bytes, over the %d a writer writes", t.Session, t.Part, ErrTooLarge, len(v), MaxTallyBytes)
	}
	if _, err := DecodeTally(v); err != nil {
		return fmt.Errorf("otelrecords: tally of session %d part %d: %w: a reader would not decode it: %v", t.Session, t.Part, ErrTooLarge, err)
	}
	return r.store.Write([]Entry{{Key: keys.Tally(uint64(t.Session), t.Part), Value: v}})
}
