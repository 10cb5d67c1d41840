package sessions

import (
	"bytes"
	"encoding/binary"
	"iter"

	"github.com/otelrecords/otelrecords/internal/keys"
)

// Counts returns how many records of each kind every session holds:
// session id, then kind, then count. It reads keys only (with the store's
// ScanKeys, when it is a KeyScanner) and decodes no value, so it costs a
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
	for key, err := range scanKeys(r.store, []byte(keys.Root+"/"), []byte(keys.Root+"0")) {
		if err != nil {
			return nil, err
		}
		i := bytes.IndexByte(key, 0)
		if i < 0 {
			continue // not a key of ours
		}
		if !bytes.Equal(key[:i], ns) {
			add()
			ns = append(ns[:0], key[:i]...)
			kind = ""
			if k := string(key[len(keys.Root)+1 : i]); k != keys.SessionsKind {
				if checked, err := keys.CheckKind(k); err == nil && checked == k {
					kind = k
				}
			}
			c = nil
		}
		if kind == "" || len(key) != i+17 {
			continue
		}
		if id := SessionID(binary.BigEndian.Uint64(key[i+1:])); c == nil || id != session {
			add()
			session = id
			if c = counts[id]; c == nil {
				c = map[string]int{}
				counts[id] = c
			}
		}
		n++
	}
	add()
	return counts, nil
}

// scanKeys yields the keys of s in [start, end), without their values when
// s is a KeyScanner.
func scanKeys(s Store, start, end []byte) iter.Seq2[[]byte, error] {
	if ks, ok := s.(KeyScanner); ok {
		return ks.ScanKeys(start, end)
	}
	return func(yield func([]byte, error) bool) {
		for e, err := range s.Scan(start, end) {
			if !yield(e.Key, err) {
				return
			}
		}
	}
}
