package importer

import (
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/ground/owned"
	"github.com/otelrecords/otelrecords/sessions"
)

// DecodeEntry decodes an entry this package wrote, as sessions.DecodeEntry
// does, for a program that hands entries on as they are written (an
// Importer's Config.Forward, the Write of a store given with
// WithStore): a session row, with kind "sessions", filled into row, or a
// record of kind, filled into rec; keys that are neither give an error
// matching sessions.ErrNotRecord. It reads each value once where
// sessions.DecodeEntry reads it twice: the first of those passes proves
// that a value from disk is within the decoding budget before anything
// is allocated, and this package's own encoding needs no such proof. A
// value it does not read in its one pass goes to sessions.DecodeEntry,
// so the answer is the same for every entry; only the cost differs, and
// an entry from elsewhere (a store's, a sender's) may cost past the
// decoding budget here: decode those with sessions.DecodeEntry. rec and
// row are filled in place, so that a caller decoding many entries
// allocates them once: rec's attributes are read into the array of those
// it held, which the caller copies out before the next call.
func DecodeEntry(e sessions.Entry, rec *sessions.Stamped[sessions.Record], row *sessions.Session) (kind string, err error) {
	return owned.DecodeEntry(e.Key, e.Value, rec, row)
}

// EntryStamp returns the kind (a piece of e.Key), session and seq of a
// record's entry from its key alone; false for another entry.
func EntryStamp(e sessions.Entry) (kind []byte, session sessions.SessionID, seq uint64, ok bool) {
	k, tail, err := keys.Split(e.Key)
	id, seq, ok := keys.RecordTail(tail)
	if err != nil || !ok || string(k) == keys.SessionsKind {
		return nil, 0, 0, false
	}
	return k, sessions.SessionID(id), seq, true
}
