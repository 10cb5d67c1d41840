package sessions

import (
	"bytes"
	"errors"
	"iter"
)

// Union returns a Store that reads several stores as one: a scan yields
// the entries of every store merged in key order, so a Records over it
// reads the sessions of all of them, oldest first, and each kind's
// records in stamp order across the stores. Sessions are told apart by
// id, which is unique across processes and machines (docs/FORMAT.md
// §4.1): stores copied from CI runners, or from several gateways, are read
// together as they are. A key that more than one store holds (a store
// copied twice, a session pulled into two stores) is read once, from the
// first of stores that holds it.
//
// When a store's scan fails (a damaged block, a store closed under it),
// onError, if not nil, is told which store (its index in stores) and why,
// and the scan goes on without it: the others are still read. With a nil
// onError the error ends the scan, as it would for one store.
//
// The Union is read-only: Write and DeleteRange fail with an error
// matching errors.ErrUnsupported and change nothing (a command that
// changes a store, prune or compact, is given one store). Close closes every store.
// Each scan holds one entry of every store at a time, and picks the
// smallest key among them: it costs a comparison per store per entry.
func Union(stores []Store, onError func(store int, err error)) Store {
	return &union{stores: stores, onError: onError}
}

type union struct {
	stores  []Store
	onError func(int, error)
}

func (u *union) Write([]Entry) error { return unionWrite{} }

func (u *union) DeleteRange([]byte, []byte, func([]byte) bool) (int, error) {
	return 0, unionWrite{}
}

// unionWrite is the error of a write to a Union.
type unionWrite struct{}

func (unionWrite) Error() string {
	return "otelrecords: several stores read as one cannot be written"
}

// Is makes the error match errors.ErrUnsupported.
func (unionWrite) Is(target error) bool { return target == errors.ErrUnsupported }

func (u *union) Close() error {
	var errs []error
	for _, s := range u.stores {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

func (u *union) Scan(start, end []byte) iter.Seq2[Entry, error] {
	scans := make([]iter.Seq2[Entry, error], len(u.stores))
	for i, s := range u.stores {
		scans[i] = s.Scan(start, end)
	}
	return mergeByKey(scans, func(e Entry) []byte { return e.Key }, u.onError)
}

// ScanKeys yields the keys Scan would, reading each store's keys without
// their values where the store can (ScanKeys): Records.Counts and
// Stamps cost over a Union what they cost over its stores.
func (u *union) ScanKeys(start, end []byte) iter.Seq2[[]byte, error] {
	scans := make([]iter.Seq2[[]byte, error], len(u.stores))
	for i, s := range u.stores {
		scans[i] = keysOf(s, start, end)
	}
	return mergeByKey(scans, func(k []byte) []byte { return k }, u.onError)
}

// mergeByKey merges sequences each in ascending key order into one, a
// key held by several yielded once, from the first sequence holding it.
// Each sequence is pulled one element at a time, so that the element it
// last gave stays valid (sequences of a Store reuse their buffers at the
// next element) until it is yielded or skipped.
func mergeByKey[T any](scans []iter.Seq2[T, error], key func(T) []byte, onError func(int, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		type head struct {
			store int
			next  func() (T, error, bool)
			at    T
			done  bool // at its end, or failed
		}
		heads := make([]*head, 0, len(scans))
		for i, scan := range scans {
			next, stop := iter.Pull2(scan)
			defer stop()
			heads = append(heads, &head{store: i, next: next})
		}
		// moveOn moves h to its next element, or marks it done: at its
		// end, or failed, and then the error, unless onError takes it, is
		// what the merge ends with.
		moveOn := func(h *head) error {
			v, err, ok := h.next()
			switch {
			case !ok:
				h.done = true
			case err != nil:
				h.done = true
				if onError == nil {
					return err
				}
				onError(h.store, err)
			default:
				h.at = v
			}
			return nil
		}
		live := heads[:0]
		for _, h := range heads {
			if err := moveOn(h); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			if !h.done {
				live = append(live, h)
			}
		}
		for len(live) > 0 {
			least := live[0]
			for _, h := range live[1:] {
				if bytes.Compare(key(h.at), key(least.at)) < 0 {
					least = h // heads keep their stores' order: a tie stays with the first
				}
			}
			if !yield(least.at, nil) {
				return
			}
			// Every head holding the key moves on, least last: the others
			// are compared with its key, valid until it moves.
			for _, h := range live {
				if h != least && bytes.Equal(key(h.at), key(least.at)) {
					if err := moveOn(h); err != nil {
						var zero T
						yield(zero, err)
						return
					}
				}
			}
			if err := moveOn(least); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			kept := live[:0]
			for _, h := range live {
				if !h.done {
					kept = append(kept, h)
				}
			}
			live = kept
		}
	}
}
