package keys

import (
	"encoding/binary"
	"errors"
)

// An Importer (OTLP from other processes, through a Collector) keeps a
// little bookkeeping of its own beside the records, under a root of its
// own so that no reader, prune or export of records/v1 ever sees it
// (docs/FORMAT.md §12):
//
//   - a sender entry per kept session it records, "<ImportRoot>/senders
//     0x00 <session u64>": which sender the session belongs to and where
//     it stands, so that a restarted Importer continues the session under
//     the same id and recognises spans the sender sends again;
//   - a pending entry per span of a kept session that waits for its
//     parent, "<ImportRoot>/pending 0x00 <session u64> <n u64>": the span
//     itself, written before the sender is told it is stored, and emptied
//     once its record is written.
const ImportRoot = "records/import/v1"

// The Importer's namespaces.
const (
	ImportSenders = ImportRoot + "/senders"
	ImportPending = ImportRoot + "/pending"
)

// ImportSender returns the key of session id's sender entry.
func ImportSender(id uint64) []byte { return SessionBound(ImportSenders, id) }

// ImportPendingSpan returns the key of the n-th pending span of session
// id.
func ImportPendingSpan(id, n uint64) []byte {
	return binary.BigEndian.AppendUint64(SessionBound(ImportPending, id), n)
}

// ImportPendingRange returns the range of session id's pending spans:
// start <= key < end.
func ImportPendingRange(id uint64) (start, end []byte) {
	return SessionBound(ImportPending, id), SessionBound(ImportPending, id+1)
}

// ParseImportKey returns the session (and, for a pending span, its
// number) of a key under ImportSenders or ImportPending.
func ParseImportKey(key []byte) (session, n uint64, err error) {
	for _, ns := range []string{ImportSenders, ImportPending} {
		if len(key) <= len(ns) || string(key[:len(ns)]) != ns || key[len(ns)] != 0 {
			continue
		}
		tail := key[len(ns)+1:]
		switch {
		case ns == ImportSenders && len(tail) == 8:
			return binary.BigEndian.Uint64(tail), 0, nil
		case ns == ImportPending && len(tail) == 16:
			return binary.BigEndian.Uint64(tail), binary.BigEndian.Uint64(tail[8:]), nil
		}
	}
	return 0, 0, errors.New("not an importer key")
}
