package sessions

import "iter"

// Entry is one key and its value in a Store.
type Entry struct {
	Key   []byte
	Value []byte
}

// Store is the ordered key-value store a session writes through and the
// Records reader reads from: the one seam between the retention rules and a
// database. It is small on purpose, as slog.Handler is: everything about
// records (the key layout, the CBOR values, pruning) lives in this package,
// so a Store only keeps ordered bytes. The Badger store (package
// badgerstore) and the in-memory store (NewMemStore) both pass the
// conformance suite in package sessionstest.
//
// A Store is safe for concurrent use.
//
// A Store may also yield the keys of a range without reading their
// values, through a method
//
//	ScanKeys(start, end []byte) iter.Seq2[[]byte, error]
//
// that yields the keys Scan would, in the same order, each valid until the
// next iteration, an error yielded once as the last element. Records.Counts
// and Records.Stamps use it when the store has it, and Scan otherwise; the
// Badger store, MemStore and Union have it (package sessionstest checks
// it agrees with Scan).
type Store interface {
	// Write stores the entries, in order; an entry whose key exists
	// replaces it. When Write returns nil every entry is durable (acknowledged
	// by the database); on error some may be, and writing them again is
	// harmless. Write does not retain the slices after it returns.
	Write(entries []Entry) error

	// Scan yields, in ascending byte order of keys, every entry whose key k
	// has start <= k < end; a nil end means no upper bound. The yielded
	// key and value are valid only until the next iteration: copy what you
	// keep. An error ends the sequence.
	Scan(start, end []byte) iter.Seq2[Entry, error]

	// DeleteRange deletes every key k with start <= k < end for which
	// match(k) is true (every such key when match is nil), and returns how
	// many keys it deleted. Its cost follows the keys in the range, not the
	// size of the store. match must not retain k.
	DeleteRange(start, end []byte, match func(key []byte) bool) (int, error)

	// Close releases the store. Calls after the first return nil.
	Close() error
}

// keyScanner is a Store with ScanKeys (see Store).
type keyScanner interface {
	ScanKeys(start, end []byte) iter.Seq2[[]byte, error]
}
