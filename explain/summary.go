package explain

import (
	"cmp"
	"math"
	"slices"
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

// interval is a record's stretch of its session's time, and its kind's
// number in the Tally.
type interval struct {
	kind       int32
	start, end time.Duration
}

// Tally adds up a session's records as they come, in any order, into a
// Summary. It holds three words per record (its kind and interval), never
// a record, so a caller can summarise a session while it reads it for
// something else. Give it the records of one session: the Summary's ID is
// the first record's session. The zero Tally is ready to use.
type Tally struct {
	id         sessions.SessionID
	start, end time.Duration
	kinds      map[string]int32 // a number per kind, in the order seen
	names      []string         // kind names by number
	intervals  []interval
}

// Add counts one record.
func (t *Tally) Add(kr sessions.KindRecord) {
	start, end := kr.Stamp.Offset, endOf(kr.Stamp, kr.Record.Wall)
	if len(t.intervals) == 0 {
		t.id, t.start, t.end = kr.Stamp.Session, start, end
	}
	t.start, t.end = min(t.start, start), max(t.end, end)
	k, ok := t.kinds[kr.Kind]
	if !ok {
		if t.kinds == nil {
			t.kinds = make(map[string]int32)
		}
		k = int32(len(t.names))
		t.kinds[kr.Kind] = k
		t.names = append(t.names, kr.Kind)
	}
	t.intervals = append(t.intervals, interval{k, start, end})
}

// Summary returns the summary of the records added so far. Each kind's
// wall is one sweep over its intervals sorted by start; all kinds are
// sorted in one slice, so a hundred thousand kinds cost no more than a
// hundred thousand records of one.
func (t *Tally) Summary() Summary {
	s := Summary{ID: t.id, Records: len(t.intervals), Start: t.start, End: t.end}
	// Number the kinds in name order, and sort the intervals by kind and
	// start: each kind's are then a run, in the order Kinds lists them.
	byName := make([]int32, len(t.names))
	for i := range byName {
		byName[i] = int32(i)
	}
	slices.SortFunc(byName, func(a, b int32) int { return cmp.Compare(t.names[a], t.names[b]) })
	rank := make([]int32, len(t.names))
	for r, k := range byName {
		rank[k] = int32(r)
	}
	iv := t.intervals
	slices.SortFunc(iv, func(a, b interval) int {
		if c := cmp.Compare(rank[a.kind], rank[b.kind]); c != 0 {
			return c
		}
		return cmp.Compare(a.start, b.start)
	})
	s.Kinds = make([]KindSummary, 0, len(t.names))
	for i := 0; i < len(iv); {
		j := i + 1
		for j < len(iv) && iv[j].kind == iv[i].kind {
			j++
		}
		s.Kinds = append(s.Kinds, KindSummary{Kind: t.names[iv[i].kind], Records: j - i, Wall: union(iv[i:j])})
		i = j
	}
	return s
}

// union returns the length of the union of intervals sorted by start.
func union(iv []interval) time.Duration {
	var total time.Duration
	cur := iv[0]
	for _, x := range iv[1:] {
		if x.start <= cur.end {
			cur.end = max(cur.end, x.end)
			continue
		}
		total = addSat(total, length(cur.start, cur.end))
		cur = x
	}
	return addSat(total, length(cur.start, cur.end))
}

// Summary returns the tree's session summary.
func (t *SessionTree) Summary() Summary {
	var tally Tally
	for i := range int32(t.nodes.n) {
		tally.Add(t.nodes.at(i).KindRecord)
	}
	s := tally.Summary()
	s.ID = t.ID
	return s
}

// endOf returns where a record stamped at st that lasted wall ends on its
// session's clock. A negative wall (a damaged record) counts as none, and
// an end past what a Duration holds as the largest one.
func endOf(st sessions.Stamp, wall time.Duration) time.Duration {
	if wall <= 0 {
		return st.Offset
	}
	return addSat(st.Offset, wall)
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
