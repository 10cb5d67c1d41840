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
// With InSession, only that session's records are read: a seek per kind.
func (r *Records) Stamps(opts ...ReadOption) iter.Seq2[Stamp, error] {
	if len(opts) > 0 {
		return r.stampsIn(opts)
	}
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

// stampsIn yields the stamps of the records opts select, kind by kind:
// each kind's range read by its keys.
func (r *Records) stampsIn(opts []ReadOption) iter.Seq2[Stamp, error] {
	return func(yield func(Stamp, error) bool) {
		kinds, err := r.Kinds()
		if err != nil {
			yield(Stamp{}, err)
			return
		}
		for _, kind := range kinds {
			start, end := bounds(keys.Namespace(kind), opts)
			for key, err := range keysOf(r.store, start, end) {
				if err != nil {
					yield(Stamp{}, err)
					return
				}
				session, seq, ok := keyStamp(key)
				if ok && !yield(Stamp{Session: SessionID(session), Seq: seq}, nil) {
					return
				}
			}
		}
	}
}
