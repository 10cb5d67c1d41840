package sessions

import (
	"bytes"
	"iter"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// Counts returns how many records of each kind every session holds:
// session id, then kind, then count. It reads keys only (with the store's
// ScanKeys, when it has it) and decodes no value, so it costs a
// fraction of reading the records: it is what `records sessions` shows.
// A record is counted by its key, so one whose value would not decode
// (which All skips) is counted too, and so are records whose session has no
// row. Keys that are not a record's are left out, as readers leave them.
func (r *Records) Counts() (map[SessionID]map[string]int, error) {
	counts := map[SessionID]map[string]int{}
	var (
		ns      []byte         // the namespace of the kind being counted
		kind    string         // its kind, "" when it is not a kind of records
		session SessionID      // the session being counted
		c       map[string]int // its counts
		n       int            // its records of kind not yet added to c
	)
	add := func() {
		if n > 0 {
			c[kind] += n
			n = 0
		}
	}
	for key, err := range keysOf(r.store, []byte(keys.Root+"/"), []byte(keys.Root+"0")) {
		if err != nil {
			return nil, err
		}
		k, tail, err := keys.Split(key)
		if err != nil {
			continue // not a key of ours
		}
		if !bytes.Equal(k, ns) {
			add()
			ns = append(ns[:0], k...)
			kind = ""
			if keys.IsKind(string(k)) {
				kind = string(k)
			}
			c = nil
		}
		id, _, ok := keys.RecordTail(tail)
		if kind == "" || !ok {
			continue
		}
		if c == nil || SessionID(id) != session {
			add()
			session = SessionID(id)
			if c = counts[session]; c == nil {
				c = map[string]int{}
				counts[session] = c
			}
		}
		n++
	}
	add()
	return counts, nil
}

// keysOf yields the keys of s in [start, end), without their values when
// s has ScanKeys.
func keysOf(s Store, start, end []byte) iter.Seq2[[]byte, error] {
	if ks, ok := s.(keyScanner); ok {
		return ks.ScanKeys(start, end)
	}
	return scanKeys(s.Scan(start, end))
}

// scanKeys yields the keys of a scan's entries.
func scanKeys(scan iter.Seq2[Entry, error]) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for e, err := range scan {
			if !yield(e.Key, err) {
				return
			}
		}
	}
}
