package sessions

import (
	"bytes"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
)

// MemStore is a Store in memory: for tests, and for programs that want to
// assert what they recorded without a disk. It keeps its entries sorted, so
// it reads like the Badger store. The zero value is ready to use.
type MemStore struct {
	mu      sync.RWMutex
	entries []Entry // sorted by key
	closed  bool
	// shared is set while a scan may be reading entries' array: the next
	// change copies the array first and leaves the scan its own. So a scan
	// costs nothing up front, and Kinds' seek per kind is not a copy of
	// the rest of the store.
	shared atomic.Bool
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return &MemStore{} }

// own makes entries' array the store's own before a change, copying it if
// a scan may be reading it. The caller holds the write lock.
func (m *MemStore) own() {
	if m.shared.Load() {
		m.entries = slices.Clone(m.entries)
		m.shared.Store(false)
	}
}

func (m *MemStore) find(key []byte) (int, bool) {
	return slices.BinarySearchFunc(m.entries, key, func(e Entry, k []byte) int { return bytes.Compare(e.Key, k) })
}

// mergeAt is how many entries a Write takes before it merges them into
// the store in one pass rather than inserting each: inserting moves the
// entries after it, so a store written in batches out of key order (a
// pull's, a replay's) would cost the square of its size.
const mergeAt = 16

// Write stores copies of the entries, in order: of two with one key, the
// later wins.
func (m *MemStore) Write(entries []Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	copies := make([]Entry, len(entries))
	for i, e := range entries {
		copies[i] = Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)}
		if copies[i].Value == nil {
			copies[i].Value = []byte{}
		}
	}
	if len(copies) >= mergeAt {
		m.merge(copies)
		return nil
	}
	m.own()
	for _, e := range copies {
		i, ok := m.find(e.Key)
		if ok {
			m.entries[i] = e
		} else {
			m.entries = slices.Insert(m.entries, i, e)
		}
	}
	return nil
}

// merge merges entries into the store's, into a new array: sorted by key,
// the last of each key kept, and theirs over the store's.
func (m *MemStore) merge(entries []Entry) {
	byKey := func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) }
	slices.SortStableFunc(entries, byKey)
	last := entries[:0]
	for i, e := range entries {
		if i+1 < len(entries) && bytes.Equal(e.Key, entries[i+1].Key) {
			continue // a later one of this key follows
		}
		last = append(last, e)
	}
	merged := make([]Entry, 0, len(m.entries)+len(last))
	old := m.entries
	for len(old) > 0 && len(last) > 0 {
		switch c := byKey(old[0], last[0]); {
		case c < 0:
			merged, old = append(merged, old[0]), old[1:]
		case c > 0:
			merged, last = append(merged, last[0]), last[1:]
		default:
			merged, old, last = append(merged, last[0]), old[1:], last[1:]
		}
	}
	m.entries = append(append(merged, old...), last...)
	m.shared.Store(false) // a new array: no scan reads it
}

// Scan yields the entries in [start, end) in key order. It reads a snapshot
// taken when iteration begins, so a caller may write or delete while it
// iterates.
func (m *MemStore) Scan(start, end []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		m.mu.RLock()
		if m.closed {
			m.mu.RUnlock()
			yield(Entry{}, ErrClosed)
			return
		}
		i, _ := m.find(start)
		j := len(m.entries)
		if end != nil {
			j, _ = m.find(end)
		}
		var snap []Entry
		if i < j {
			// The array is not changed while it is shared (see own).
			snap = m.entries[i:j:j]
			m.shared.Store(true)
		}
		m.mu.RUnlock()
		for _, e := range snap {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// ScanKeys yields the keys of Scan, from the same snapshot.
func (m *MemStore) ScanKeys(start, end []byte) iter.Seq2[[]byte, error] {
	return scanKeys(m.Scan(start, end))
}

// DeleteRange deletes the keys in [start, end) that match.
func (m *MemStore) DeleteRange(start, end []byte, match func([]byte) bool) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	i, _ := m.find(start)
	j := len(m.entries)
	if end != nil {
		j, _ = m.find(end)
	}
	if i >= j {
		return 0, nil
	}
	m.own()
	kept := m.entries[i:i]
	for _, e := range m.entries[i:j] {
		if match != nil && !match(e.Key) {
			kept = append(kept, e)
		}
	}
	n := j - i - len(kept)
	m.entries = slices.Delete(m.entries, i+len(kept), j)
	return n, nil
}

// Len returns how many entries the store holds.
func (m *MemStore) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.entries)
}

// Close marks the store closed; later calls fail with ErrClosed. The
// entries stay readable through a new store only if the caller kept them,
// as with a real database: use Reopen to get them back.
func (m *MemStore) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

// Reopen returns a new open store holding the entries of m, as reopening a
// database directory after Close would.
func (m *MemStore) Reopen() *MemStore {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return &MemStore{entries: slices.Clone(m.entries)}
}
