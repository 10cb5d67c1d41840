package sessions

import (
	"errors"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/ground/owned"
)

// ErrNotRecord is matched by the error DecodeEntry returns for a key that
// is neither a record's nor a session row's (an Importer's bookkeeping,
// another program's key): not an error in the store, just not a record.
var ErrNotRecord = errors.New("otelrecords: not a record or a session row")

// DecodeEntry decodes one entry of a store as the reader decodes it, for
// a program that sees entries on their way into a store rather than in
// one (a Store that sends what it is given elsewhere): a session row,
// with kind "sessions", or a record of kind, its stamp the key's. Keys
// that are not a record's or a row's give an error matching ErrNotRecord
// (a tally's too: tallies.Of reads it, and a caller that only wants
// records and rows steps over it); a value that does not decode, or disagrees with its key, an error
// saying why.
func DecodeEntry(e Entry) (kind string, rec Stamped[Record], row Session, err error) {
	kind, session, seq, err := keys.Parse(e.Key)
	if err != nil {
		return "", rec, row, ErrNotRecord
	}
	if kind == keys.SessionsKind {
		row, err = sessionAt(session, 0, e.Value)
		return kind, rec, row, err
	}
	rec, err = recordAt(session, seq, e.Value)
	return kind, rec, row, err
}

func init() {
	owned.DecodeEntry = decodeOwnEntry
}

// decodeOwnEntry is owned.DecodeEntry: DecodeEntry, for an entry this
// process's encoder made, into rec and row (see owned.DecodeEntry).
func decodeOwnEntry(key, value []byte, rec, row any) (string, error) {
	r, w := rec.(*Stamped[Record]), row.(*Session)
	kind, session, seq, err := keys.Parse(key)
	if err != nil {
		return "", ErrNotRecord
	}
	if kind == keys.SessionsKind {
		*w, err = sessionAt(session, 0, value)
		return kind, err
	}
	if !decodeOwn(value, true, r) {
		*r, err = decodeRecord(value)
		if err != nil {
			return kind, err
		}
	}
	return kind, fromKeys(&r.Stamp, session, seq)
}

// decodeOwn is decodeByHand's second pass alone, for a value this
// process's encoder made: the value the first pass would have proved
// readable and within budget. It reports false for a value it does not
// read whole, or whose charges pass the budget (a value no encoder
// checked, Records.Put's say, may: the answer must be DecodeEntry's),
// and then what it left in v is to be thrown away. With reuse, the
// first attribute set read goes in the array of those v holds.
func decodeOwn(b []byte, reuse bool, v *Stamped[Record]) bool {
	if len(b) > maxValueSize {
		return false
	}
	d := recordReader{Decoder: cw.NewDecoder(b)}
	d.Fill = true
	if len(b) <= shareUpTo {
		d.Shared = string(b)
	}
	if reuse {
		d.reuse = v.Record.Attributes[:0]
	}
	*v = Stamped[Record]{}
	return d.stamped(v) && d.Len() == 0 && d.Cost <= cw.Budget(len(b))
}
