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
//   - pending entries of the spans of a kept session that wait for
//     their parents, "<ImportRoot>/pending 0x00 <session u64> <n u64>":
//     the spans themselves, written before the sender is told they are
//     stored, and emptied once their records are written;
//   - for an Importer that hands its records on and keeps none (a
//     Collector processor without a store), taken entries, "<ImportRoot>
//     /taken 0x00 <session u64> <seq u64>": the fingerprints of the
//     records handed on below seq, so that a restarted Importer
//     recognises spans sent again without the records to read them from,
//     and "<ImportRoot>/key", the secret they are hashed under.
const ImportRoot = "records/import/v1"

// The Importer's namespaces.
const (
	ImportSenders = ImportRoot + "/senders"
	ImportPending = ImportRoot + "/pending"
	ImportTaken   = ImportRoot + "/taken"
	ImportHashKey = ImportRoot + "/key"
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

// ImportTakenAt returns the key of session id's taken entry of the spans
// recorded below seq.
func ImportTakenAt(id, seq uint64) []byte { return AppendImportTakenAt(nil, id, seq) }

// AppendImportTakenAt appends ImportTakenAt(id, seq) to b.
func AppendImportTakenAt(b []byte, id, seq uint64) []byte {
	b = append(append(b, ImportTaken...), 0)
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(b, id), seq)
}

// ImportTakenRange returns the range of session id's taken entries:
// start <= key < end.
func ImportTakenRange(id uint64) (start, end []byte) {
	return SessionBound(ImportTaken, id), SessionBound(ImportTaken, id+1)
}

// ParseImportKey returns the session (and, for a pending entry, its
// number; for a taken entry, its seq) of a key under ImportSenders,
// ImportPending or ImportTaken.
func ParseImportKey(key []byte) (session, n uint64, err error) {
	for _, ns := range []string{ImportSenders, ImportPending, ImportTaken} {
		if len(key) <= len(ns) || string(key[:len(ns)]) != ns || key[len(ns)] != 0 {
			continue
		}
		tail := key[len(ns)+1:]
		switch {
		case ns == ImportSenders && len(tail) == 8:
			return binary.BigEndian.Uint64(tail), 0, nil
		case ns != ImportSenders && len(tail) == 16:
			return binary.BigEndian.Uint64(tail), binary.BigEndian.Uint64(tail[8:]), nil
		}
	}
	return 0, 0, errors.New("not an importer key")
}
