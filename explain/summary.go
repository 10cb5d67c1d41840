package explain

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// Summary is what one session spent its time on, each stretch of time
// counted once.
type Summary struct {
	// ID is the session's id.
	ID sessions.SessionID
	// Records is how many records the session holds.
	Records int
	// Start is the earliest offset of a record: near 0, where the
	// session's clock starts at its first stamp, unless the first records
	// stamped were not kept (dropped, or evicted before the session
	// changed anything).
	Start time.Duration
	// End is the latest end (offset + wall) of a record. The session row
	// says when the session started on the wall clock, but not when it
	// ended: its records do.
	End time.Duration
	// Kinds is each kind's share, in kind order.
	Kinds []KindSummary
}

// Duration returns how long the session's records span: from the first
// record's start to the last one's end.
func (s Summary) Duration() time.Duration { return length(s.Start, s.End) }

// KindSummary is one kind's share of a session.
type KindSummary struct {
	// Kind is the kind.
	Kind string
	// Records is how many records of the kind the session holds.
	Records int
	// Wall is how long at least one record of the kind was open: the
	// union of their intervals [offset, offset + wall). A record inside
	// another of its kind, or overlapping one, adds only the time the
	// other did not cover, so no kind claims more than the session's
	// duration, however its records nest or run at once.
	//
	// Summing the walls of the records with no ancestor of their kind
	// would count four concurrent requests four times, and would add up
	// records of a kind that overlap without nesting (records written by
	// code, which have no parent) twice: the busy time of the kind, not
	// the session's time spent on it.
	Wall time.Duration
}

// interval is a stretch of a session's time.
type interval struct {
	start, end time.Duration
}

// kindTally is what a Tally holds of one kind: its records, and their
// intervals merged into runs as they come. A record that starts within
// the last run, or after it, extends the run or starts the next one; only
// one that starts before it (records out of start order) is held as it
// is, to be merged when the summary is asked.
type kindTally struct {
	name    string
	records int
	runs    []interval
	ordered bool // every run starts after the end of the one before
	// forget says the runs before the last are added to closed and let
	// go, for a caller that can read the records again should one come
	// out of order (SessionTree.Summary).
	forget bool
	closed time.Duration
}

// Tally adds up a session's records as they come, in any order, into a
// Summary. It holds, per kind, the stretches of time its records cover,
// merged as they come: records of a kind that overlap or nest, as a
// session's records do, make one stretch, so a session of a million
// records that run one inside another holds a few words. Give it the
// records of one session: the Summary's ID is the first record's
// session. The zero Tally is ready to use.
type Tally struct {
	id         sessions.SessionID
	records    int
	start, end time.Duration
	kinds      map[string]*kindTally
}

// Add counts one record.
func (t *Tally) Add(kr sessions.KindRecord) {
	k := t.kinds[kr.Kind]
	if k == nil {
		if t.kinds == nil {
			t.kinds = make(map[string]*kindTally)
		}
		k = &kindTally{name: strings.Clone(kr.Kind), ordered: true}
		t.kinds[k.name] = k
	}
	if t.records == 0 {
		t.id = kr.Stamp.Session
	}
	t.add(k, kr.Stamp.Offset, kr.Record.Wall)
}

func (t *Tally) add(k *kindTally, offset, wall time.Duration) {
	start, end := offset, endOf(offset, wall)
	if t.records == 0 {
		t.start, t.end = start, end
	}
	t.records++
	t.start, t.end = min(t.start, start), max(t.end, end)
	k.records++
	if n := len(k.runs); n > 0 {
		last := &k.runs[n-1]
		switch {
		case start >= last.start && start <= last.end:
			last.end = max(last.end, end)
			return
		case start < last.start:
			k.ordered = false
		case k.forget && k.ordered:
			k.closed = addSat(k.closed, length(last.start, last.end))
			*last = interval{start, end}
			return
		}
	}
	k.runs = append(k.runs, interval{start, end})
}

// Summary returns the summary of the records added so far.
func (t *Tally) Summary() Summary {
	s := Summary{ID: t.id, Records: t.records, Start: t.start, End: t.end}
	s.Kinds = make([]KindSummary, 0, len(t.kinds))
	for _, k := range t.kinds {
		s.Kinds = append(s.Kinds, KindSummary{Kind: k.name, Records: k.records, Wall: k.wall()})
	}
	slices.SortFunc(s.Kinds, func(a, b KindSummary) int { return cmp.Compare(a.Kind, b.Kind) })
	return s
}

// wall returns the length of the union of the kind's runs, sorting them
// first if they came out of order.
func (k *kindTally) wall() time.Duration {
	if !k.ordered {
		slices.SortFunc(k.runs, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
		merged := k.runs[:1]
		for _, x := range k.runs[1:] {
			if last := &merged[len(merged)-1]; x.start <= last.end {
				last.end = max(last.end, x.end)
				continue
			}
			merged = append(merged, x)
		}
		k.runs, k.ordered = merged, true
	}
	total := k.closed
	for _, r := range k.runs {
		total = addSat(total, length(r.start, r.end))
	}
	return total
}

// Summary returns the tree's session summary. It goes through the nodes
// in stamp order, merging each kind's intervals as a Tally does. Records
// come in the order they started, so each kind holds one stretch of time,
// adding up those it has passed; a kind whose records came out of that
// order (a damaged or imported store) is gone through again, its
// stretches held.
func (t *SessionTree) Summary() Summary {
	var tally Tally
	kinds := make([]*kindTally, len(t.kinds))
	for i, name := range t.kinds {
		kinds[i] = &kindTally{name: name, ordered: true, forget: true}
	}
	for n := range t.Nodes() {
		tally.add(kinds[n.kind], n.Offset, n.Wall)
	}
	again := false
	for _, k := range kinds {
		if !k.ordered {
			*k = kindTally{name: k.name, ordered: true}
			again = true
		}
	}
	if again {
		var redo Tally
		for n := range t.Nodes() {
			if k := kinds[n.kind]; !k.forget {
				redo.add(k, n.Offset, n.Wall)
			}
		}
	}
	s := Summary{ID: t.ID, Records: tally.records, Start: tally.start, End: tally.end}
	for _, k := range kinds {
		if k.records > 0 {
			s.Kinds = append(s.Kinds, KindSummary{Kind: k.name, Records: k.records, Wall: k.wall()})
		}
	}
	slices.SortFunc(s.Kinds, func(a, b KindSummary) int { return cmp.Compare(a.Kind, b.Kind) })
	return s
}

// endOf returns where a record that started at offset and lasted wall
// ends on its session's clock. A negative wall (a damaged record) counts
// as none, and an end past what a Duration holds as the largest one.
func endOf(offset, wall time.Duration) time.Duration {
	if wall <= 0 {
		return offset
	}
	return addSat(offset, wall)
}

// length returns end - start for start <= end, or the largest Duration
// if that overflows (a damaged record's negative offset).
func length(start, end time.Duration) time.Duration {
	if d := end - start; d >= 0 {
		return d
	}
	if end < start {
		return 0
	}
	return math.MaxInt64
}

// addSat returns a + b for b >= 0, or the largest Duration if that
// overflows.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
