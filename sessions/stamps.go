package sessions

import (
	"iter"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// Stamps yields the stamp (session and seq; no offset) of every record in
// the store, kind by kind, each kind's in stamp order. Like Counts it
// reads keys only and decodes no value, so a command can learn which
// records a store holds — which of them it has sent already, say — for a
// fraction of reading them. Keys that are not a record's are left out.
func (r *Records) Stamps() iter.Seq2[Stamp, error] {
	return func(yield func(Stamp, error) bool) {
		for key, err := range keysOf(r.store, []byte(keys.Root+"/"), []byte(keys.Root+"0")) {
			if err != nil {
				yield(Stamp{}, err)
				return
			}
			kind, tail, err := keys.Split(key)
			if err != nil || !keys.IsKind(string(kind)) {
				continue
			}
			session, seq, ok := keys.RecordTail(tail)
			if !ok {
				continue
			}
			if !yield(Stamp{Session: SessionID(session), Seq: seq}, nil) {
				return
			}
		}
	}
}
