package sessions

import (
	"bytes"
	"encoding/binary"
	"errors"
	"iter"
	"math"
	"slices"
	"sync/atomic"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// Records reads a store: its sessions oldest first, and each kind's records
// in stamp order (session, seq). Reads are ordered range scans over the
// key layout, never load-then-sort. A value that does not decode is
// skipped and counted (see Skipped), so one damaged record never hides the
// rest.
//
// The key is the truth: a record is in the session and at the seq its key
// says, a session row has the id its key says. A value whose stamp (or
// row id) is zero takes it from the key; a value that names another
// session, seq or id than its key disagrees with it, and is skipped and
// counted as one that does not decode (docs/FORMAT.md §4). A Records is
// safe for concurrent use.
type Records struct {
	store   Store
	skipped atomic.Int64
}

// NewRecords returns a reader of the store.
func NewRecords(s Store) *Records { return &Records{store: s} }

// Skipped returns how many values this reader has skipped because they did
// not decode, disagreed with their key, or did not fit the type of a typed
// read, since it was made.
func (r *Records) Skipped() int64 { return r.skipped.Load() }

// ReadOption narrows what a read returns.
type ReadOption func(*readRange)

type readRange struct {
	from, to uint64 // sessions with from <= id <= to
	seq      uint64 // in session from, records with seq >= this
}

// InSession restricts a read to the records of one session.
func InSession(id SessionID) ReadOption {
	return func(rr *readRange) { rr.from, rr.to, rr.seq = uint64(id), uint64(id), 0 }
}

// InSessionFrom restricts a read to the records of one session from seq
// on: what a session recorded since a point, read without going over what
// it recorded before (a reader following a session, an Importer reading
// back what it wrote last).
func InSessionFrom(id SessionID, seq uint64) ReadOption {
	return func(rr *readRange) { rr.from, rr.to, rr.seq = uint64(id), uint64(id), seq }
}

func bounds(namespace string, opts []ReadOption) (start, end []byte) {
	rr := readRange{0, math.MaxUint64, 0}
	for _, o := range opts {
		o(&rr)
	}
	start = keys.SessionBound(namespace, rr.from)
	if rr.seq > 0 {
		start = binary.BigEndian.AppendUint64(start, rr.seq)
	}
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
		decodeRange(r, start, end, false, sessionAt, yield)
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

// Newest returns the newest session row: the session that started last
// (the highest id), the one a program just ran; false for a store with
// none. It reads the rows' keys, and decodes one row. A row that does not
// decode is skipped (and counted): the newest that does is returned.
func (r *Records) Newest() (Session, bool, error) {
	var ids []uint64
	for e, err := range r.store.Scan(keys.NamespaceStart(keys.Sessions), keys.NamespaceEnd(keys.Sessions)) {
		if err != nil {
			return Session{}, false, err
		}
		if kind, id, _, err := keys.Parse(e.Key); err == nil && kind == keys.SessionsKind {
			ids = append(ids, id)
		}
	}
	for i := len(ids) - 1; i >= 0; i-- {
		s, ok, err := r.Session(SessionID(ids[i]))
		if err != nil || ok {
			return s, ok, err
		}
	}
	return Session{}, false, nil
}

// Record returns the record of a kind at seq in session id — a record
// read before, read again by its stamp — and false if the store has none.
// A value that does not decode is skipped and counted, as All skips it.
func (r *Records) Record(kind string, id SessionID, seq uint64) (Stamped[Record], bool, error) {
	k, err := keys.CheckKind(kind)
	if err != nil {
		return Stamped[Record]{}, false, err
	}
	start := keys.Record(k, uint64(id), seq)
	for rec, err := range decodeSeq(r, start, append(start, 0)) {
		return rec, err == nil, err
	}
	return Stamped[Record]{}, false, nil
}

// decodeSeq yields the records of the keys in [start, end).
func decodeSeq(r *Records, start, end []byte) iter.Seq2[Stamped[Record], error] {
	return func(yield func(Stamped[Record], error) bool) {
		decodeRange(r, start, end, false, recordAt, yield)
	}
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
		decodeRange(r, start, end, false, recordAt, yield)
	}
}

// errDisagrees is why a value whose stamp or id is not its key's is
// skipped.
var errDisagrees = errors.New("value disagrees with its key")

// recordAt decodes the record stored under a record key whose session and
// seq are given: the key's, whatever the value says (see Records).
func recordAt(session, seq uint64, value []byte) (Stamped[Record], error) {
	v, err := decodeRecord(value)
	if err != nil {
		return v, err
	}
	return v, fromKeys(&v.Stamp, session, seq)
}

// fromKeys checks a stamp read from a value against its key's session
// and seq, as fromKey does each.
func fromKeys(st *Stamp, session, seq uint64) error {
	if !fromKey((*uint64)(&st.Session), session) || !fromKey(&st.Seq, seq) {
		return errDisagrees
	}
	return nil
}

// sessionAt decodes the session row stored under the key of the given id.
func sessionAt(id, _ uint64, value []byte) (Session, error) {
	s, err := decodeSession(value)
	if err != nil {
		return s, err
	}
	if !fromKey((*uint64)(&s.ID), id) {
		return s, errDisagrees
	}
	return s, nil
}

// fromKey reports whether a number read from a value agrees with its key:
// it is the key's, or zero — absent — and then set to the key's. A zero
// seq is a real seq, but taking the key's for it changes nothing when the
// two agree, and makes a stamp-less value read where its key puts it.
func fromKey(v *uint64, key uint64) bool {
	if *v == 0 {
		*v = key
	}
	return *v == key
}

// decodeRange yields the decoded values of the keys of ours in [start,
// end), skipping (and counting) those that do not decode or disagree with
// their key. decode gets the session and seq the key names. With ahead, the
// range is read ahead on a second goroutine (scanAhead).
func decodeRange[T any](r *Records, start, end []byte, ahead bool, decode func(session, seq uint64, value []byte) (T, error), yield func(T, error) bool) {
	var zero T
	scan := r.store.Scan
	if ahead {
		scan = r.scanAhead
	}
	for e, err := range scan(start, end) {
		if err != nil {
			yield(zero, err)
			return
		}
		session, seq, ok := keyStamp(e.Key)
		if !ok {
			continue
		}
		v, err := decode(session, seq, e.Value)
		if err != nil {
			r.skipped.Add(1)
			continue
		}
		if !yield(v, nil) {
			return
		}
	}
}

// keyStamp returns the session (or row id) and seq a key of ours names,
// and false for a key that is not one of ours: readers step over those.
func keyStamp(key []byte) (session, seq uint64, ok bool) {
	_, session, seq, err := keys.Parse(key)
	return session, seq, err == nil
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
	pruned, _, err := r.PrunePlan(keep)
	if err != nil || len(pruned) == 0 {
		return 0, err
	}
	newest := uint64(slices.Max(pruned))
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
	// Then the tallies of those sessions (and of any at or below the
	// newest whose row is gone), each session's with its row.
	if _, err := r.store.DeleteRange(keys.NamespaceStart(keys.Sessions), upTo(keys.Sessions, newest), keys.IsTally); err != nil {
		return 0, err
	}
	for _, id := range pruned {
		k := keys.Session(uint64(id))
		if _, err := r.store.DeleteRange(k, append(k, 0), nil); err != nil {
			return 0, err
		}
	}
	return len(pruned), nil
}

// PrunePlan returns the ids of the sessions Prune(keep) deletes, oldest
// first, and how many it keeps. Both come from the session rows' keys, as
// Prune's do, so a row whose value does not decode or names another id is
// counted by its key: a command that prints what it prunes prints what
// Prune deletes.
func (r *Records) PrunePlan(keep int) (pruned []SessionID, kept int, err error) {
	keep = max(keep, 0)
	var ids []SessionID
	for e, err := range r.store.Scan(keys.NamespaceStart(keys.Sessions), keys.NamespaceEnd(keys.Sessions)) {
		if err != nil {
			return nil, 0, err
		}
		kind, id, _, err := keys.Parse(e.Key)
		if err != nil || kind != keys.SessionsKind {
			continue
		}
		ids = append(ids, SessionID(id))
	}
	if len(ids) <= keep {
		return nil, len(ids), nil
	}
	return ids[:len(ids)-keep], keep, nil
}

// upTo returns the end of the range of a namespace's records stamped in
// sessions at or below id.
func upTo(namespace string, id uint64) []byte {
	if id == math.MaxUint64 {
		return keys.NamespaceEnd(namespace)
	}
	return keys.SessionBound(namespace, id+1)
}

// Store returns the store r reads: what a package that keeps something
// of its own beside the records (package tallies) writes into.
func (r *Records) Store() Store { return r.store }

// ReadValues yields decode's value of each entry of the store r reads
// whose key k has start <= k < end, in key order: how a package that
// reads what a store keeps beside the records (package tallies) reads it
// as untrusted input, as r reads records. decode returns false for a key
// that is not one it reads, stepped over; an entry it refuses (an error)
// is skipped and counted in Skipped. An error from the store ends the
// sequence with that error.
func ReadValues[T any](r *Records, start, end []byte, decode func(Entry) (T, bool, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for e, err := range r.store.Scan(start, end) {
			if err != nil {
				yield(zero, err)
				return
			}
			v, ok, err := decode(e)
			if !ok {
				continue
			}
			if err != nil {
				r.skipped.Add(1)
				continue
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}
