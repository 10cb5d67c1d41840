package explain

import (
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
// read. So it holds at most 128 records per kind, never a long kind's
// records, and costs one seek per kind plus the records read.
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
		var (
			all   []*run // every kind with records in the session
			heads heads  // the next seq of each run not yet done
		)
		defer func() {
			for _, ru := range all {
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
			all = append(all, ru)
			ok, err := ru.advance()
			if err != nil {
				yield(sessions.KindRecord{}, err)
				return
			}
			if ok {
				heads = append(heads, head{ru.head.Stamp.Seq, int32(len(all) - 1)})
			} else {
				ru.close()
			}
		}
		heads.init()
		for len(heads) > 0 {
			ru := all[heads[0].run]
			if !yield(ru.head, nil) {
				return
			}
			switch ok, err := ru.advance(); {
			case err != nil:
				yield(sessions.KindRecord{}, err)
				return
			case !ok:
				ru.close()
				heads.pop()
			default:
				heads[0].seq = ru.head.Stamp.Seq
				heads.down(0)
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

// head is a run's next seq, and the run. The heap orders these small
// values rather than the runs: a session of a hundred thousand kinds
// compares them seventeen times a record, and comparing records through
// pointers would wander over all of memory.
type head struct {
	seq uint64
	run int32 // in kind order: ties (a damaged store's) go by kind
}

func (a head) less(b head) bool { return a.seq < b.seq || a.seq == b.seq && a.run < b.run }

// heads is a min-heap of heads.
type heads []head

func (h heads) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h heads) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *heads) pop() {
	old := *h
	old[0] = old[len(old)-1]
	*h = old[:len(old)-1]
	h.down(0)
}
