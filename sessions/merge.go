package sessions

import (
	"cmp"
	"container/heap"
	"iter"
)

// KindRecord is a record and the kind it was read from.
type KindRecord struct {
	Kind string
	Stamped[Record]
}

// InStampOrder yields the records of every given kind (every kind in the
// store when kinds is nil) merged into one sequence in stamp order
// (session, seq): the order the records were stamped, across kinds — the
// story of a session. Each kind's records already come in that order, so
// this is a k-way merge of the per-kind reads; it holds one record per
// kind, never the whole store.
func (r *Records) InStampOrder(kinds []string, opts ...ReadOption) iter.Seq2[KindRecord, error] {
	return func(yield func(KindRecord, error) bool) {
		if kinds == nil {
			var err error
			if kinds, err = r.Kinds(); err != nil {
				yield(KindRecord{}, err)
				return
			}
		}
		h := make(cursors, 0, len(kinds))
		for _, kind := range kinds {
			next, stop := iter.Pull2(r.All(kind, opts...))
			defer stop()
			rec, err, ok := next()
			if err != nil {
				yield(KindRecord{}, err)
				return
			}
			if ok {
				h = append(h, &cursor{KindRecord{kind, rec}, next})
			}
		}
		heap.Init(&h)
		for len(h) > 0 {
			c := h[0]
			if !yield(c.head, nil) {
				return
			}
			rec, err, ok := c.next()
			switch {
			case err != nil:
				yield(KindRecord{}, err)
				return
			case !ok:
				heap.Pop(&h)
			default:
				c.head.Stamped = rec
				heap.Fix(&h, 0)
			}
		}
	}
}

// cursor is one kind's read: its next record, and how to get the one after.
type cursor struct {
	head KindRecord
	next func() (Stamped[Record], error, bool)
}

// cursors is a min-heap of cursors by their next record's stamp.
type cursors []*cursor

func (h cursors) Len() int { return len(h) }

func (h cursors) Less(i, j int) bool {
	a, b := h[i].head, h[j].head
	if c := cmp.Compare(a.Stamp.Session, b.Stamp.Session); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.Stamp.Seq, b.Stamp.Seq); c != 0 {
		return c < 0
	}
	// A seq is unique within its session, so this only orders a damaged
	// store's duplicates, and keeps the output the same from run to run.
	return a.Kind < b.Kind
}

func (h cursors) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *cursors) Push(x any) { *h = append(*h, x.(*cursor)) }

func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}
