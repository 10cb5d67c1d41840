package sessions

import (
	"iter"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// KindRecord is a record and the kind it was read from.
type KindRecord struct {
	Kind string
	Stamped[Record]
}

// How much a merged read holds. Each kind's records are read a run at a
// time into a buffer, the store's read closed between runs, and the next
// run read from where the last one stopped: one seek a run. A kind's run
// doubles each time it is read again, up to mergeRunMax, but the runs
// held together stay within mergeHold records (and one per kind), so a
// store of a hundred thousand kinds of a record or two costs what its
// records do, and no open read per kind. Records may be huge (a value is
// up to 16 MiB), so a run also ends at mergeRunBytes of values, and the
// runs held together stay within mergeHoldBytes (besides one record per
// kind): a thousand records of 2 MiB are not a 2 GB run.
const (
	mergeHold      = 1 << 16 // records held across all kinds, besides one per kind
	mergeRunMax    = 1024    // the longest run read from one kind at a time
	mergeRunBytes  = 4 << 20 // the most value bytes one run reads, besides its first record
	mergeHoldBytes = 8 << 20 // value bytes held across all kinds, besides one record per kind
)

// InStampOrder yields the records of every given kind (every kind in the
// store when kinds is nil) merged into one sequence in stamp order
// (session, seq): the order the records were stamped, across kinds — the
// story of a session. Each kind's records already come in that order, so
// this is a k-way merge of the per-kind reads.
//
// It holds a bounded buffer of each kind's next records, never a kind's
// whole read, and keeps no read of the store open while it yields: at most
// 65,536 records and 8 MiB of values, plus one record per kind, are held
// at once, and a kind of n
// records costs about log2(n) + n/1024 seeks. A store of many kinds of a
// few records each is read in about one seek per kind. Records are checked
// against their keys as All checks them.
func (r *Records) InStampOrder(kinds []string, opts ...ReadOption) iter.Seq2[KindRecord, error] {
	return func(yield func(KindRecord, error) bool) {
		if kinds == nil {
			var err error
			if kinds, err = r.Kinds(); err != nil {
				yield(KindRecord{}, err)
				return
			}
		}
		m := merge{r: r}
		// The first runs share what may be held; later runs take what the
		// merge has let go.
		first := max(1, min(mergeRunMax, mergeHold/max(len(kinds), 1)))
		for _, kind := range kinds {
			k, err := keys.CheckKind(kind)
			if err != nil {
				yield(KindRecord{}, err)
				return
			}
			from, end := bounds(keys.Namespace(k), opts)
			ru := &run{kind: kind, from: from, end: end, size: first}
			if err := m.fill(ru); err != nil {
				yield(KindRecord{}, err)
				return
			}
			if len(ru.recs) > 0 {
				m.runs = append(m.runs, ru)
			}
		}
		m.init()
		for len(m.runs) > 0 {
			ru := m.runs[0]
			rec := ru.recs[ru.at]
			// Let the record go once merged: the buffer is not a copy of
			// the store.
			ru.recs[ru.at] = Stamped[Record]{}
			ru.at++
			m.held--
			if !yield(KindRecord{ru.kind, rec}, nil) {
				return
			}
			if ru.at == len(ru.recs) {
				if err := m.fill(ru); err != nil {
					yield(KindRecord{}, err)
					return
				}
			}
			if ru.at == len(ru.recs) {
				m.pop()
			} else {
				m.down(0)
			}
		}
	}
}

// run is one kind's read: the records read and not yet merged, and where
// in the store the next ones start.
type run struct {
	kind  string
	recs  []Stamped[Record] // recs[at:] are still to be merged
	at    int
	from  []byte // where the next run starts; nil once the kind is done
	end   []byte
	size  int // how many records the next run reads
	bytes int // the value bytes of recs, counted in the merge's held bytes
}

func (ru *run) head() Stamp { return ru.recs[ru.at].Stamp }

// merge is a min-heap of the runs with records to merge, by their next
// record's stamp, and the count of records their buffers hold.
type merge struct {
	r         *Records
	runs      []*run
	held      int
	heldBytes int
}

// fill reads the kind's next run of records into its buffer, which the
// merge has emptied, and reports an error from the store. Values that do
// not decode or disagree with their keys are skipped and counted as All
// skips them; a run stops on a key, not on a value, so none is read twice.
func (m *merge) fill(ru *run) error {
	ru.recs, ru.at = ru.recs[:0], 0
	m.heldBytes -= ru.bytes
	ru.bytes = 0
	if ru.from == nil {
		return nil
	}
	start := ru.from
	ru.from = nil // done, unless a record is found past this run
	maxBytes := min(mergeRunBytes, mergeHoldBytes-m.heldBytes)
	for e, err := range m.r.store.Scan(start, ru.end) {
		if err != nil {
			return err
		}
		session, seq, ok := keyStamp(e.Key)
		if !ok {
			continue
		}
		if len(ru.recs) == ru.size || len(ru.recs) > 0 && ru.bytes+len(e.Value) > maxBytes {
			// There is more: the next run starts at this key, and its
			// value is left for it.
			ru.from = append(start[:0:0], e.Key...)
			break
		}
		rec, err := recordAt(session, seq, e.Value)
		if err != nil {
			m.r.skipped.Add(1)
			continue
		}
		ru.recs = append(ru.recs, rec)
		ru.bytes += len(e.Value)
	}
	m.held += len(ru.recs)
	m.heldBytes += ru.bytes
	// A kind read again is a long one: read more of it at a time, within
	// what the merge may hold.
	ru.size = max(1, min(2*ru.size, mergeRunMax, mergeHold-m.held))
	return nil
}

// less orders runs by their next record's stamp. A seq is unique within
// its session, so equal stamps come only from a damaged store's
// duplicates across kinds: they go by kind, so the output is the same
// from run to run.
func (m *merge) less(i, j int) bool {
	a, b := m.runs[i].head(), m.runs[j].head()
	if a.Session != b.Session {
		return a.Session < b.Session
	}
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return m.runs[i].kind < m.runs[j].kind
}

func (m *merge) init() {
	for i := len(m.runs)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
}

func (m *merge) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(m.runs) {
			return
		}
		c := l
		if r := l + 1; r < len(m.runs) && m.less(r, l) {
			c = r
		}
		if !m.less(c, i) {
			return
		}
		m.runs[i], m.runs[c] = m.runs[c], m.runs[i]
		i = c
	}
}

func (m *merge) pop() {
	last := len(m.runs) - 1
	m.runs[0] = m.runs[last]
	m.runs[last] = nil
	m.runs = m.runs[:last]
	m.down(0)
}
