package badgerstore

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/chunk"
	"github.com/otelrecords/otelrecords/sessions"
)

// Scan yields, in byte order of keys, every entry whose key k has
// start <= k < end (a nil end is no bound), from one Badger read
// transaction: a snapshot, so writes and deletes made while it runs, from
// the loop body or elsewhere, do not change what it yields. Keys are read
// first and each value only when its entry is reached; a value kept inline
// is yielded from Badger's buffer, without another copy. The records of a
// chunk (internal/store/chunk) are yielded one by one, under the keys they were
// written with, as if each were an entry. Key and value are valid until
// the next iteration; an empty value is yielded as nil.
//
// An error is yielded once, as the last element. Close ends a Scan in
// progress at its next entry, with sessions.ErrClosed; and since Close
// waits for the Scan to end, it must not be called from its loop body.
func (s *Store) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return s.scan(start, end, true)
}

// ScanKeys yields the keys Scan would, without reading a value: no value
// is copied or looked up in the value log, so counting records by their
// keys (sessions.Records.Counts) costs about what iterating keys does; a
// chunk's value is read, for the keys of its records. The rules are
// Scan's: a snapshot, each key valid until the next iteration, an error
// yielded once as the last element, and Close not to be called from the
// loop body.
func (s *Store) ScanKeys(start, end []byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for e, err := range s.scan(start, end, false) {
			if !yield(e.Key, err) {
				return
			}
		}
	}
}

// scan is Scan, and with values false ScanKeys: its entries then hold
// no value.
func (s *Store) scan(start, end []byte, values bool) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		if err := s.begin(); err != nil {
			yield(sessions.Entry{}, err)
			return
		}
		defer s.end()
		if end != nil && bytes.Compare(start, end) >= 0 {
			return
		}
		err := s.db.View(func(txn *badger.Txn) error {
			spooled := s.spooledIn(start, end)
			for e, err := range s.stored(txn, start, end, values) {
				if err != nil {
					return err
				}
				// Spooled entries not yet merged come in key order; one
				// whose key is in the store too replaces it, as its merge
				// will.
				for len(spooled) > 0 && bytes.Compare(spooled[0].Key, e.Key) <= 0 {
					same := bytes.Equal(spooled[0].Key, e.Key)
					if !yield(spooled[0], nil) {
						return nil
					}
					spooled = spooled[1:]
					if same {
						e.Key = nil
					}
				}
				if e.Key != nil && !yield(e, nil) {
					return nil
				}
			}
			for _, e := range spooled {
				if s.closed.Load() {
					return sessions.ErrClosed
				}
				if !yield(e, nil) {
					return nil
				}
			}
			return nil
		})
		if errors.Is(err, sessions.ErrClosed) {
			yield(sessions.Entry{}, err)
		} else if err != nil {
			yield(sessions.Entry{}, fmt.Errorf("otelrecords: scan %s: %w", s.dir, err))
		}
	}
}

// stored yields the entries of txn in [start, end) in key order, the
// records of chunks among them, each key once. A chunk that holds start
// begins before it (at most chunk.MaxSpan seqs), and one that holds a key
// just below end has a key of its own past end: both are read. An error
// (sessions.ErrClosed after Close) is yielded once, last.
func (s *Store) stored(txn *badger.Txn, start, end []byte, values bool) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		from := chunk.SearchStart(start)
		it := txn.NewIterator(rangeOptions(from, end))
		defer it.Close()
		var (
			held    records // records of chunks read, not yet yielded
			last    []byte  // the key yielded last: a key is yielded once
			buf     []byte  // reused for the values that are copied
			decoded []chunk.Record
			block   []byte // the decoded chunk, reused
			first   []byte // its first record's key, copied
			key     []byte // the key of a chunk's record being yielded
		)
		// emit yields e unless its key was yielded already.
		emit := func(e sessions.Entry) bool {
			if last != nil && bytes.Compare(e.Key, last) <= 0 {
				return true
			}
			last = append(last[:0], e.Key...)
			if !values {
				e.Value = nil
			}
			return yield(e, nil)
		}
		// flush yields the held records with keys below lo (all for nil).
		flush := func(lo []byte) bool {
			for held.Len() > 0 && (lo == nil || bytes.Compare(held[0].Key, lo) < 0) {
				if !emit(heap.Pop(&held).(sessions.Entry)) {
					return false
				}
			}
			return true
		}
		// low returns the least key the entry at the iterator may hold:
		// a chunk's first record's, a plain entry's own; nil (no bound)
		// past the last entry, or past end.
		low := func() []byte {
			if !it.Valid() {
				return nil
			}
			k := it.Item().Key()
			if f, _, _, ok := chunk.ParseKey(k); ok {
				k = f
			}
			if end != nil && bytes.Compare(k, end) >= 0 {
				return nil
			}
			return k
		}
		it.Seek(from)
		for it.Valid() {
			if s.closed.Load() {
				yield(sessions.Entry{}, sessions.ErrClosed)
				return
			}
			item := it.Item()
			k := item.Key()
			f, lo, hi, isChunk := chunk.ParseKey(k)
			if end != nil && bytes.Compare(k, end) >= 0 && (!isChunk || bytes.Compare(f, end) >= 0) {
				break
			}
			if !flush(low()) {
				return
			}
			if !isChunk {
				switch {
				case bytes.Compare(k, start) < 0:
					// Before the range: only chunks there reach into it.
				case held.Len() > 0:
					// A chunk's records are still to come beside it.
					e := sessions.Entry{Key: bytes.Clone(k)}
					if values {
						v, err := item.ValueCopy(nil)
						if err != nil {
							yield(sessions.Entry{}, err)
							return
						}
						e.Value = v
					}
					heap.Push(&held, e)
				default:
					e, err := s.entryOf(item, k, values, &buf)
					if err != nil {
						yield(sessions.Entry{}, err)
						return
					}
					if !emit(e) {
						return
					}
				}
				it.Next()
				continue
			}
			if bytes.Compare(chunk.RecordAt(f, hi), start) < 0 {
				it.Next()
				continue // a chunk that ends before the range
			}
			// The chunk is decoded inside Value's callback into a block
			// of ours: a value in the value log holds its file's read lock
			// while the callback runs (copyValuesFrom).
			err := item.Value(func(v []byte) error {
				var err error
				decoded, block, err = chunk.Decode(v, lo, hi, block[:0], decoded[:0])
				return err
			})
			if err != nil {
				yield(sessions.Entry{}, fmt.Errorf("chunk %q: %w", k, err))
				return
			}
			first = append(first[:0], f...)
			// What comes next decides which records go out at once: those
			// below the next entry's least key, when none is held, are in
			// order; the others wait among the held ones, copied.
			it.Next()
			next := low()
			for _, r := range decoded {
				key = binary.BigEndian.AppendUint64(append(key[:0], first[:len(first)-8]...), r.Seq)
				if bytes.Compare(key, start) < 0 || (end != nil && bytes.Compare(key, end) >= 0) {
					continue
				}
				if held.Len() == 0 && (next == nil || bytes.Compare(key, next) < 0) {
					if !emit(sessions.Entry{Key: key, Value: r.Value}) {
						return
					}
					continue
				}
				e := sessions.Entry{Key: bytes.Clone(key)}
				if values {
					e.Value = bytes.Clone(r.Value)
				}
				heap.Push(&held, e)
			}
		}
		flush(nil)
	}
}

// entryOf returns the entry of a plain item: its value from Badger's
// buffer when inline and small, a copy in *buf otherwise.
func (s *Store) entryOf(item *badger.Item, key []byte, values bool, buf *[]byte) (sessions.Entry, error) {
	if !values {
		return sessions.Entry{Key: key}, nil
	}
	if item.ValueSize() >= copyValuesFrom {
		v, err := item.ValueCopy((*buf)[:0])
		*buf = v
		return sessions.Entry{Key: key, Value: v}, err
	}
	var e sessions.Entry
	err := item.Value(func(v []byte) error {
		e = sessions.Entry{Key: key, Value: v}
		return nil
	})
	return e, err
}

// records is a heap of entries by key, for the records of chunks that
// interleave with the entries around them.
type records []sessions.Entry

func (r records) Len() int           { return len(r) }
func (r records) Less(i, j int) bool { return bytes.Compare(r[i].Key, r[j].Key) < 0 }
func (r records) Swap(i, j int)      { r[i], r[j] = r[j], r[i] }
func (r *records) Push(x any)        { *r = append(*r, x.(sessions.Entry)) }
func (r *records) Pop() any {
	old := *r
	e := old[len(old)-1]
	*r = old[:len(old)-1]
	return e
}

// DeleteRange deletes every key k with start <= k < end (a nil end is no
// bound) for which match(k) is true (every such key when match is nil), and
// returns how many it deleted. It walks the keys of the range without
// reading a value, and deletes them through one WriteBatch, which commits a
// Badger transaction each time one fills: its cost follows the keys in the
// range (live ones, and tombstones not yet compacted), not the size of the
// store. The records of a chunk are keys as any other: match is asked of
// each, and a chunk some of whose records stay is written again with those
// alone. match must not retain k. DeleteRange may be called from a Scan's
// loop body.
//
// DeleteRange fails with an error matching ErrReadOnly on a read-only
// Store, and with sessions.ErrClosed after Close. On an error some keys may
// be deleted already.
func (s *Store) DeleteRange(start, end []byte, match func(key []byte) bool) (int, error) {
	if err := s.begin(); err != nil {
		return 0, err
	}
	defer s.end()
	if s.readOnly {
		return 0, fmt.Errorf("%w: cannot delete from %s", ErrReadOnly, s.dir)
	}
	if end != nil && bytes.Compare(start, end) >= 0 {
		return 0, nil
	}
	var wb *badger.WriteBatch // made at the first key: an empty range writes nothing
	batch := func() *badger.WriteBatch {
		if wb == nil {
			wb = s.db.NewWriteBatch()
		}
		return wb
	}
	n := 0
	from := chunk.SearchStart(start)
	err := s.db.View(func(txn *badger.Txn) error {
		plain, chunked, err := s.deleteIn(txn, from, start, end, match, batch)
		if err != nil || !chunked {
			n = plain // each key of the range once: Badger yields a key once
			return err
		}
		// The count is of keys as Scan yields them: a record written
		// twice (alone and in a chunk, or in two) is deleted from both,
		// and counted once. Only a range holding chunks needs this second
		// pass over the same snapshot (a prune's ranges mostly hold none:
		// the pass was a quarter of BENCHMARKS.md, figure 8).
		for k, err := range s.stored(txn, start, end, false) {
			if err != nil {
				return err
			}
			if match == nil || match(k.Key) {
				n++
			}
		}
		return nil
	})
	if wb != nil {
		defer wb.Cancel()
		if err == nil {
			err = wb.Flush()
		}
	}
	if err != nil {
		return n, fmt.Errorf("otelrecords: delete from %s: %w", s.dir, err)
	}
	return n, nil
}

// deleteIn adds to the batch the deletes of DeleteRange in txn, walking
// from from (chunk.SearchStart(start)): it returns how many plain keys
// (not in a chunk) it deleted, and whether the range held a chunk.
func (s *Store) deleteIn(txn *badger.Txn, from, start, end []byte, match func([]byte) bool, batch func() *badger.WriteBatch) (plain int, chunked bool, _ error) {
	it := txn.NewIterator(rangeOptions(from, end))
	defer it.Close()
	for it.Seek(from); it.Valid(); it.Next() {
		item := it.Item()
		key := item.Key()
		first, _, hi, isChunk := chunk.ParseKey(key)
		if end != nil && bytes.Compare(key, end) >= 0 && (!isChunk || bytes.Compare(first, end) >= 0) {
			break
		}
		if isChunk {
			chunked = true
			if bytes.Compare(chunk.RecordAt(first, hi), start) < 0 {
				continue
			}
			if _, err := s.deleteInChunk(item, start, end, match, batch); err != nil {
				return plain, chunked, err
			}
			continue
		}
		if bytes.Compare(key, start) < 0 || (match != nil && !match(key)) {
			continue
		}
		// The batch keeps the key until it commits, and the iterator
		// reuses its buffer at Next: copy.
		if err := batch().Delete(item.KeyCopy(nil)); err != nil {
			return plain, chunked, err
		}
		plain++
	}
	return plain, chunked, nil
}

// deleteInChunk deletes the records of the chunk at item that lie in
// [start, end) and match: the chunk goes, and those of its records that
// stay are written again, as a chunk or alone. It returns how many
// records it deleted.
func (s *Store) deleteInChunk(item *badger.Item, start, end []byte, match func([]byte) bool, batch func() *badger.WriteBatch) (int, error) {
	key := item.KeyCopy(nil)
	first, lo, hi, _ := chunk.ParseKey(key)
	var recs []chunk.Record
	if err := item.Value(func(v []byte) error {
		var err error
		recs, _, err = chunk.Decode(v, lo, hi, nil, nil)
		return err
	}); err != nil {
		return 0, fmt.Errorf("chunk %q: %w", key, err)
	}
	var stay []sessions.Entry
	for _, r := range recs {
		k := chunk.RecordAt(first, r.Seq)
		if bytes.Compare(k, start) >= 0 && (end == nil || bytes.Compare(k, end) < 0) && (match == nil || match(k)) {
			continue
		}
		stay = append(stay, sessions.Entry{Key: k, Value: r.Value})
	}
	deleted := len(recs) - len(stay)
	if deleted == 0 {
		return 0, nil
	}
	wb := batch()
	if err := wb.Delete(key); err != nil {
		return 0, err
	}
	again, _ := chunk.Chunked(stay)
	for _, e := range again {
		if err := wb.Set(e.Key, e.Value); err != nil {
			return 0, err
		}
	}
	return deleted, nil
}

// rangeOptions returns the options of a key iterator over [start, end). It
// reads no values ahead, and narrows the iterator to the longest prefix
// that every key of the range shares, which lets Badger skip the tables
// holding none of them.
func rangeOptions(start, end []byte) badger.IteratorOptions {
	opts := badger.IteratorOptions{PrefetchValues: false}
	if end != nil {
		n := 0
		for n < len(start) && n < len(end) && start[n] == end[n] {
			n++
		}
		if n > 0 {
			opts.Prefix = bytes.Clone(start[:n])
		}
	}
	return opts
}
