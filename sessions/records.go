package sessions

import (
	"bytes"
	"iter"
	"math"
	"slices"
	"sync/atomic"

	"github.com/otelrecords/otelrecords/internal/keys"
)

// Records reads a store: its sessions oldest first, and each kind's records
// in stamp order (session, seq). Reads are ordered range scans over the
// key layout, never load-then-sort. A value that does not decode is
// skipped and counted (see Skipped), so one damaged record never hides the
// rest. A Records is safe for concurrent use.
type Records struct {
	store   Store
	skipped atomic.Int64
}

// NewRecords returns a reader of the store.
func NewRecords(s Store) *Records { return &Records{store: s} }

// Skipped returns how many values this reader has skipped because they did
// not decode (or did not fit the type of a typed read), since it was made.
func (r *Records) Skipped() int64 { return r.skipped.Load() }

// ReadOption narrows what a read returns.
type ReadOption func(*readRange)

type readRange struct {
	from, to uint64 // sessions with from <= id <= to
}

// InSession restricts a read to the records of one session.
func InSession(id SessionID) ReadOption {
	return func(rr *readRange) { rr.from, rr.to = uint64(id), uint64(id) }
}

func bounds(namespace string, opts []ReadOption) (start, end []byte) {
	rr := readRange{0, math.MaxUint64}
	for _, o := range opts {
		o(&rr)
	}
	start = keys.SessionBound(namespace, rr.from)
	if rr.to == math.MaxUint64 {
		return start, keys.NamespaceEnd(namespace)
	}
	return start, keys.SessionBound(namespace, rr.to+1)
}

// Sessions yields every session row, oldest first. An error from the store
// ends the sequence with that error; a row that does not decode is skipped
// and counted.
func (r *Records) Sessions(opts ...ReadOption) iter.Seq2[Session, error] {
	return func(yield func(Session, error) bool) {
		start, end := bounds(keys.Sessions, opts)
		decodeRange(r, start, end, decodeSession, yield)
	}
}

// Session returns the session row with the given id, and false if the
// store has none.
func (r *Records) Session(id SessionID) (Session, bool, error) {
	for s, err := range r.Sessions(InSession(id)) {
		return s, err == nil, err
	}
	return Session{}, false, nil
}

// All yields every record of a kind in stamp order, as generic bodies.
func (r *Records) All(kind string, opts ...ReadOption) iter.Seq2[Stamped[Record], error] {
	return func(yield func(Stamped[Record], error) bool) {
		k, err := keys.CheckKind(kind)
		if err != nil {
			yield(Stamped[Record]{}, err)
			return
		}
		start, end := bounds(keys.Namespace(k), opts)
		decodeRange(r, start, end, decodeRecord, yield)
	}
}

// decodeRange yields the decoded values of the keys of ours in [start,
// end), skipping (and counting) those that do not decode.
func decodeRange[T any](r *Records, start, end []byte, decode func([]byte) (T, error), yield func(T, error) bool) {
	var zero T
	for e, err := range r.store.Scan(start, end) {
		if err != nil {
			yield(zero, err)
			return
		}
		if !keys.Parses(e.Key) {
			continue
		}
		v, err := decode(e.Value)
		if err != nil {
			r.skipped.Add(1)
			continue
		}
		if !yield(v, nil) {
			return
		}
	}
}

// Kinds returns the kinds the store holds records of, in byte order. It
// costs one seek per kind, not a scan of the records.
func (r *Records) Kinds() ([]string, error) {
	var kinds []string
	start := []byte(keys.Root + "/")
	end := []byte(keys.Root + "0") // '0' follows '/': the end of everything under Root/
	for {
		var next []byte
		for e, err := range r.store.Scan(start, end) {
			if err != nil {
				return nil, err
			}
			i := bytes.IndexByte(e.Key, 0)
			if i < 0 {
				// Not a key of ours: step over it.
				next = append(bytes.Clone(e.Key), 0)
				break
			}
			ns := string(e.Key[:i])
			if kind := ns[len(keys.Root)+1:]; ns != keys.Sessions {
				if k, err := keys.CheckKind(kind); err == nil && k == kind {
					kinds = append(kinds, kind)
				}
			}
			next = keys.NamespaceEnd(ns)
			break
		}
		if next == nil {
			return kinds, nil
		}
		start = next
	}
}

// Prune deletes every session but the newest keep, with their records,
// and returns how many sessions went. Every record stamped in a session
// whose id is at or below the newest pruned session's goes too, whether
// or not its session row still exists: a process whose session another
// process pruned while it ran keeps writing under it, and those records go
// at the next prune rather than never. Keys under Root that do not parse
// are left alone. Its cost follows what it deletes: one range delete per
// kind.
func (r *Records) Prune(keep int) (int, error) {
	keep = max(keep, 0)
	var ids []uint64
	for e, err := range r.store.Scan(keys.NamespaceStart(keys.Sessions), keys.NamespaceEnd(keys.Sessions)) {
		if err != nil {
			return 0, err
		}
		kind, id, _, err := keys.Parse(e.Key)
		if err != nil || kind != keys.SessionsKind {
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) <= keep {
		return 0, nil
	}
	pruned := ids[:len(ids)-keep]
	newest := slices.Max(pruned)
	kinds, err := r.Kinds()
	if err != nil {
		return 0, err
	}
	// Records first, rows last: a prune cut short leaves rows, and the next
	// prune finishes the job.
	for _, kind := range kinds {
		ns := keys.Namespace(kind)
		if _, err := r.store.DeleteRange(keys.NamespaceStart(ns), upTo(ns, newest), keys.Parses); err != nil {
			return 0, err
		}
	}
	for _, id := range pruned {
		k := keys.Session(id)
		if _, err := r.store.DeleteRange(k, append(k, 0), nil); err != nil {
			return 0, err
		}
	}
	return len(pruned), nil
}

// upTo returns the end of the range of a namespace's records stamped in
// sessions at or below id.
func upTo(namespace string, id uint64) []byte {
	if id == math.MaxUint64 {
		return keys.NamespaceEnd(namespace)
	}
	return keys.SessionBound(namespace, id+1)
}
