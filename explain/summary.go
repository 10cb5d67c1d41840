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
	// Start is the earliest offset of a record: 0, where the session's
	// clock starts, unless the first records stamped were not kept.
	Start time.Duration
	// End is the latest end (offset + wall) of a record.
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

// interval is a record's stretch of its session's time.
type interval struct{ start, end time.Duration }

// Tally adds up a session's records as they come, in any order, into a
// Summary. It holds two words per record (its interval), never a record,
// so a caller can summarise a session while it reads it for something
// else. Give it the records of one session: the Summary's ID is the first
// record's session. The zero Tally is ready to use.
type Tally struct {
	id         sessions.SessionID
	n          int
	start, end time.Duration
	kinds      map[string][]interval
}

// Add counts one record.
func (t *Tally) Add(kr sessions.KindRecord) {
	start, end := kr.Stamp.Offset, endOf(kr.Stamp, kr.Record.Wall)
	if t.n == 0 {
		t.id, t.start, t.end = kr.Stamp.Session, start, end
		t.kinds = make(map[string][]interval)
	}
	t.n++
	t.start, t.end = min(t.start, start), max(t.end, end)
	t.kinds[kr.Kind] = append(t.kinds[kr.Kind], interval{start, end})
}

// Summary returns the summary of the records added so far.
func (t *Tally) Summary() Summary {
	s := Summary{ID: t.id, Records: t.n, Start: t.start, End: t.end}
	for kind, iv := range t.kinds {
		s.Kinds = append(s.Kinds, KindSummary{Kind: kind, Records: len(iv), Wall: union(iv)})
	}
	slices.SortFunc(s.Kinds, func(a, b KindSummary) int { return cmp.Compare(a.Kind, b.Kind) })
	return s
}

// union returns the length of the union of the intervals, which it sorts.
// Records come nearly sorted by start (stamps follow starts, up to the
// jitter of concurrent stamps), which the sort makes quick.
func union(iv []interval) time.Duration {
	slices.SortFunc(iv, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
	var total time.Duration
	var cur interval
	for i, x := range iv {
		switch {
		case i == 0:
			cur = x
		case x.start <= cur.end:
			cur.end = max(cur.end, x.end)
		default:
			total = addSat(total, length(cur.start, cur.end))
			cur = x
		}
	}
	if len(iv) > 0 {
		total = addSat(total, length(cur.start, cur.end))
	}
	return total
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
