package explain

import (
	"cmp"
	"container/heap"
	"iter"

	"github.com/otelrecords/otelrecords/sessions"
)

// readAhead is how many of a kind's records in a session InStampOrder
// reads and holds before it gives the kind a cursor of its own. A cursor
// is a pulled iterator (a coroutine) over an open scan: cheap for a few
// long kinds, ruinous for a hundred thousand kinds of a record or two,
// which are better read whole. Past this many, the kind is read again from
// its start through a cursor, so at most this many records are decoded
// twice per long kind.
const readAhead = 128

// InStampOrder yields the records of one session, of the given kinds
// (every kind in the store when kinds is nil), merged into stamp order:
// the order the session stamped them, across kinds.
//
// It reads each kind's session range in turn, and merges by seq, with a
// heap, only the kinds that have records in the session. A kind with few
// records in the session is read whole; a kind with many keeps one open
// read. So it holds at most readAhead records per kind, never a long
// kind's records, and costs one seek per kind plus the records read.
// [sessions.Records.InStampOrder] opens a read per kind instead, which a
// store of many kinds makes costly.
//
// A record whose stored stamp names another session, although its key
// lies in this one's range, is damaged, and skipped. An error from the
// store ends the sequence with that error.
func InStampOrder(r *sessions.Records, id sessions.SessionID, kinds []string) iter.Seq2[sessions.KindRecord, error] {
	return func(yield func(sessions.KindRecord, error) bool) {
		if kinds == nil {
			var err error
			if kinds, err = r.Kinds(); err != nil {
				yield(sessions.KindRecord{}, err)
				return
			}
		}
		in := sessions.InSession(id)
		var h runs
		defer func() {
			for _, ru := range h {
				ru.close()
			}
		}()
		for _, kind := range kinds {
			var ahead []sessions.Stamped[sessions.Record]
			long := false
			for rec, err := range r.All(kind, in) {
				if err != nil {
					yield(sessions.KindRecord{}, err)
					return
				}
				if rec.Stamp.Session != id {
					continue
				}
				if len(ahead) == readAhead {
					long = true
					break
				}
				ahead = append(ahead, rec)
			}
			ru := &run{session: id, kind: kind}
			if long {
				ru.next, ru.stop = iter.Pull2(r.All(kind, in))
			} else {
				ru.ahead = ahead
			}
			h = append(h, ru)
			if ok, err := ru.advance(); err != nil || !ok {
				h = h[:len(h)-1]
				ru.close()
				if err != nil {
					yield(sessions.KindRecord{}, err)
					return
				}
			}
		}
		heap.Init(&h)
		for len(h) > 0 {
			ru := h[0]
			if !yield(ru.head, nil) {
				return
			}
			switch ok, err := ru.advance(); {
			case err != nil:
				yield(sessions.KindRecord{}, err)
				return
			case !ok:
				heap.Pop(&h)
				ru.close()
			default:
				heap.Fix(&h, 0)
			}
		}
	}
}

// run is one kind's records in a session: its next record (head), and
// the records after it, held (ahead) or behind an open read (next).
type run struct {
	session sessions.SessionID
	kind    string
	head    sessions.KindRecord
	ahead   []sessions.Stamped[sessions.Record]
	next    func() (sessions.Stamped[sessions.Record], error, bool)
	stop    func()
}

// advance moves head to the kind's next record, and reports false when
// there is none.
func (ru *run) advance() (bool, error) {
	if ru.next == nil {
		if len(ru.ahead) == 0 {
			return false, nil
		}
		ru.head = sessions.KindRecord{Kind: ru.kind, Stamped: ru.ahead[0]}
		// Let the record go once merged: a held run is not a second copy
		// of the session.
		ru.ahead[0] = sessions.Stamped[sessions.Record]{}
		ru.ahead = ru.ahead[1:]
		return true, nil
	}
	for {
		rec, err, ok := ru.next()
		if err != nil || !ok {
			return false, err
		}
		if rec.Stamp.Session == ru.session {
			ru.head = sessions.KindRecord{Kind: ru.kind, Stamped: rec}
			return true, nil
		}
	}
}

// close ends the run's open read, if it has one.
func (ru *run) close() {
	if ru.stop != nil {
		ru.stop()
		ru.stop, ru.next = nil, nil
	}
	ru.ahead = nil
}

// runs is a min-heap of runs by the seq of their next record.
type runs []*run

func (h runs) Len() int { return len(h) }

func (h runs) Less(i, j int) bool {
	a, b := h[i].head, h[j].head
	if c := cmp.Compare(a.Stamp.Seq, b.Stamp.Seq); c != 0 {
		return c < 0
	}
	// A seq is unique within its session, so this only orders a damaged
	// store's duplicates, the same way from run to run.
	return a.Kind < b.Kind
}

func (h runs) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *runs) Push(x any) { *h = append(*h, x.(*run)) }

func (h *runs) Pop() any {
	old := *h
	ru := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return ru
}
