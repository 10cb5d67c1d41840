package sessions

import (
	"errors"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// ErrNotRecord is matched by the error DecodeEntry returns for a key that
// is neither a record's nor a session row's (an Importer's bookkeeping,
// another program's key): not an error in the store, just not a record.
var ErrNotRecord = errors.New("otelrecords: not a record or a session row")

// DecodeEntry decodes one entry of a store as the reader decodes it, for
// a program that sees entries on their way into a store rather than in
// one (a Store that sends what it is given elsewhere): a session row,
// with kind "sessions", or a record of kind, its stamp the key's. Keys
// that are not a record's or a row's give an error matching ErrNotRecord;
// a value that does not decode, or disagrees with its key, an error
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
