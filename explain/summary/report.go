package summary

import (
	"container/heap"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// The limits of a report, which keep a page quick to open whatever the
// session's size: ReportOptions' defaults.
const (
	// DefaultMaxBars is how many records a timeline draws at most: the
	// longest ones, when the session has more.
	DefaultMaxBars = 20_000
	// DefaultMaxRows is how many records each kind's table lists at most
	// (the first ones, in stamp order), and how many records of the
	// critical path are named (those that held it up most).
	DefaultMaxRows = 500
	// DefaultSlowest is how many of the slowest records a report lists.
	DefaultSlowest = 10
	// DefaultMaxGroups is how many groups of roots a report draws, a row
	// each, and lists: those with the most time.
	DefaultMaxGroups = 20
	// DefaultWidth and DefaultMinBar are the timeline's width and its
	// narrowest bar, in the units of the report's drawing: a bar over a
	// pixel on a page 1,200 pixels wide or more.
	DefaultWidth, DefaultMinBar = 1200.0, 1.5
)

// ReportOptions shape a report. A zero field takes its default.
type ReportOptions struct {
	MaxBars, MaxRows, Slowest, MaxGroups int
	// Width and MinBar are the width of the drawing the timeline is laid
	// out for, and its narrowest bar, in one unit: a bar is laid out as
	// long as it is drawn, at least MinBar/Width of the session, so that
	// hairlines do not cover one another.
	Width, MinBar float64
	// Progress, when not nil, is told how many records were read, every
	// few thousand and at the end.
	Progress func(read int64)
}

func (o *ReportOptions) defaults() {
	for _, f := range []struct {
		v   *int
		def int
	}{{&o.MaxBars, DefaultMaxBars}, {&o.MaxRows, DefaultMaxRows}, {&o.Slowest, DefaultSlowest}, {&o.MaxGroups, DefaultMaxGroups}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if o.Width <= 0 || o.MinBar <= 0 {
		o.Width, o.MinBar = DefaultWidth, DefaultMinBar
	}
}

// A Report is one session laid out for a page: what it did per kind, its
// slowest records, its critical path, and its timeline. It names records
// by seq; a page reads again the records it shows (at most MaxRows a kind,
// Slowest, and the drawn), in stamp order.
type Report struct {
	Session sessions.Session
	// Tree is the session's tree: each record's verdict, kind and place.
	Tree *explain.SessionTree
	// Summary is each kind's time, counted once; Summary.End the
	// session's duration.
	Summary explain.Summary
	// Total is how many records the session holds.
	Total int
	// Kinds are its kinds, in kind order: those its tally counted too,
	// with no kept record (Count 0).
	Kinds []*Kind
	// Tallied says whether the session has a tally (tallies.Tally):
	// false for a session kept by a writer that did not count what it let
	// go, whose hits are of kept records only.
	Tallied bool
	// Slowest are the seqs of its slowest records, slowest first (equal
	// walls in stamp order).
	Slowest []uint64
	// Path is its critical path, in pre-order; Named its records that
	// held the session up most, at most MaxRows, in path order.
	Path  []explain.Step
	Named []Step

	// Rows holds the row of the timeline of each record drawn, by seq,
	// and RowCount how many rows the records drawn take (groups of roots
	// are drawn below them, a row each).
	Rows     map[uint64]int
	RowCount int
	// Omitted is how many records are not drawn (more than MaxBars), and
	// Shortest the shortest wall drawn then.
	Omitted  int
	Shortest time.Duration
	// MinLength is the least length of a bar, laid out.
	MinLength time.Duration
	// Grouping is how the roots are grouped, nil when they are drawn each
	// (GroupRoots). Groups are the groups drawn, at most MaxGroups, each on a
	// row, its roots not drawn whole merged into stretches; GroupedRoots
	// is how many roots they hold.
	Grouping     *Grouping
	Groups       []Group
	GroupedRoots int

	expanded map[uint64]bool // the roots drawn whole, when grouped
}

// Kind is one kind of a session: its records, their time, and what they
// did.
type Kind struct {
	Kind  string
	Count int
	// Wall is how long at least one of its records was open: time counted
	// once. Longest is its longest wall; Sum its walls added up.
	Wall, Longest, Sum time.Duration
	// Verdicts counts its records by what they did (explain.Verdict).
	Verdicts [4]int
	// Tallied is what the session's tally counted of the kind: records
	// let go, not kept, every one a hit (zero without a tally).
	Tallied tallies.Entry
	// Rows are the seqs of its first MaxRows records, in stamp order.
	Rows []uint64
}

// Mean returns the mean wall time of the kind's records.
func (k *Kind) Mean() time.Duration {
	if k.Count == 0 {
		return 0
	}
	return k.Sum / time.Duration(k.Count)
}

// NewReport reads the session s of the store, a pass over its records, and
// lays it out: it holds the session's tree (a few words a record) and a
// seq per record listed, whatever the session's size.
func NewReport(r *sessions.Records, s sessions.Session, o ReportOptions) (*Report, error) {
	o.defaults()
	kinds, err := r.Kinds()
	if err != nil {
		return nil, err
	}
	rep := &Report{Session: s}
	byKind := map[string]*Kind{}
	var (
		b       explain.TreeBuilder
		slowest []sessions.KindRecord // without their records' bodies
	)
	for kr, err := range r.InStampOrder(kinds, sessions.InSession(s.ID)) {
		if err != nil {
			return nil, err
		}
		if rep.Total++; o.Progress != nil && rep.Total%4096 == 0 {
			o.Progress(int64(rep.Total))
		}
		rec := kr.Record
		k := byKind[kr.Kind]
		if k == nil {
			k = &Kind{Kind: kr.Kind}
			byKind[kr.Kind] = k
		}
		k.Count++
		k.Sum += max(rec.Wall, 0)
		k.Longest = max(k.Longest, rec.Wall)
		if len(k.Rows) < o.MaxRows {
			k.Rows = append(k.Rows, kr.Stamp.Seq)
		}
		bare := sessions.KindRecord{Stamped: sessions.Stamped[sessions.Record]{Stamp: kr.Stamp, Record: sessions.Record{Wall: rec.Wall}}}
		slowest = keepSlowest(slowest, bare, o.Slowest)
		if err := b.Add(kr); err != nil {
			return nil, err
		}
	}
	if o.Progress != nil {
		o.Progress(int64(rep.Total))
	}
	for _, kr := range slowest {
		rep.Slowest = append(rep.Slowest, kr.Stamp.Seq)
	}
	t := b.Tree()
	rep.Tree, rep.Summary = t, t.Summary()
	for _, ks := range rep.Summary.Kinds {
		byKind[ks.Kind].Wall = ks.Wall
	}
	// What each record did, which its tree tells: a lookup inside which
	// a compile changed something missed, though it changed nothing.
	for n := range t.Nodes() {
		byKind[t.Kind(n)].Verdicts[n.Verdict()]++
	}
	tally, ok, err := tallies.Read(r, s.ID)
	if err != nil {
		return nil, err
	}
	rep.Tallied = ok
	sum := tallied.New(nil)
	sum.Add(tally, ok)
	for _, e := range sum.Kinds() {
		if byKind[e.Kind] == nil {
			byKind[e.Kind] = &Kind{Kind: e.Kind}
		}
		byKind[e.Kind].Tallied = e
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range byKind {
			if !yield(k) {
				return
			}
		}
	}) {
		rep.Kinds = append(rep.Kinds, byKind[name])
	}
	rep.Path = t.CriticalPath()
	if rep.Named, err = NameSteps(r, t, MostCritical(rep.Path, o.MaxRows)); err != nil {
		return nil, err
	}
	drawn := rep.drawn(o.MaxBars)
	// A session with too many roots to draw each draws the slowest whole,
	// and the others grouped.
	if err := rep.group(r, drawn, o.MaxGroups); err != nil {
		return nil, err
	}
	rep.MinLength = max(time.Duration(float64(rep.Summary.End)*o.MinBar/o.Width), 1)
	rep.Rows, rep.RowCount = layOutTree(t, drawn, rep.MinLength)
	if rep.Grouping != nil {
		rep.stretch()
	}
	return rep, nil
}

// drawn returns the seqs of the records the timeline draws: every one, or,
// of a session of more than most, the longest.
func (rep *Report) drawn(most int) map[uint64]bool {
	t := rep.Tree
	drawn := make(map[uint64]bool, min(t.Len(), most))
	if t.Len() <= most {
		for n := range t.Nodes() {
			drawn[n.Seq] = true
		}
		return drawn
	}
	shortest := longestWalls(t, most)
	// Of the records as short as the shortest drawn, the first ones
	// fill what is left.
	ties := most
	for n := range t.Nodes() {
		if n.Wall > shortest {
			ties--
		}
	}
	for n := range t.Nodes() {
		switch {
		case n.Wall > shortest:
			drawn[n.Seq] = true
		case n.Wall == shortest && ties > 0:
			drawn[n.Seq] = true
			ties--
		}
	}
	rep.Omitted = t.Len() - len(drawn)
	rep.Shortest = shortest
	return drawn
}

// longestWalls returns the wall of the nth longest record of the tree:
// the shortest of the n longest. It holds n walls, in a heap.
func longestWalls(t *explain.SessionTree, n int) time.Duration {
	h := make(wallHeap, 0, n)
	for nd := range t.Nodes() {
		switch {
		case len(h) < n:
			heap.Push(&h, nd.Wall)
		case nd.Wall > h[0]:
			h[0] = nd.Wall
			heap.Fix(&h, 0)
		}
	}
	return h[0]
}

// wallHeap is a min-heap of walls.
type wallHeap []time.Duration

func (h wallHeap) Len() int           { return len(h) }
func (h wallHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h wallHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wallHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *wallHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
