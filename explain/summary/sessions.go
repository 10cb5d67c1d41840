package summary

import (
	"cmp"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// Options bound what Sessions keeps of each session.
type Options struct {
	// Slowest is how many of each session's slowest records it keeps
	// (records summary --top: 3).
	Slowest int
	// Named is how many records of each session's critical path it names,
	// those that held it up most (records summary: 20). The path itself
	// is kept whole.
	Named int
}

// A Session is one session summed up.
type Session struct {
	// Session is its row; for records whose row is gone (another process
	// pruned it while it ran), a bare one (explain.OrphanRow).
	sessions.Session
	// Summary is each kind's count and time, counted once; Summary.End is
	// the session's duration, from its first stamp, where its clock
	// starts, to the end of its last record.
	Summary explain.Summary
	// Path is its critical path, in pre-order (explain's CriticalPath).
	Path []explain.Step
	// Requests is how many requests it holds (explain's Requests): the
	// path is the longest one's.
	Requests int
	// Slowest are its slowest records, slowest first (equal walls in
	// stamp order), each as Compact keeps it.
	Slowest []sessions.KindRecord
	// Named are the records of the path that held the session up most,
	// at most Options.Named, in path order, named.
	Named []Step
	// Hits are the hit rates of its kinds with a hit (tallied.KindRates):
	// kept hits and, when Tallied, the hits its tally counted (records
	// let go), against its kept records that were not hits. Tallied is
	// false for a session kept by a writer that did not count what it
	// let go: its hits are of kept records only.
	Hits    []tallied.KindRate
	Tallied bool
}

// Step is a record on a critical path, with what a reader is shown of it.
type Step struct {
	explain.Step
	Kind, Name   string
	Offset, Wall time.Duration
	// Depth is how deep the record lies in the session's tree (0 for a
	// root).
	Depth int
}

// Sessions sums up the sessions of the store the options select (all of
// them, or one: sessions.InSession), oldest first, records whose row is
// gone under a bare row (explain.Walk). It reads the store once, a session
// at a time: memory follows the records of the largest session (a few
// words each, for its tree), not the store.
func Sessions(r *sessions.Records, o Options, opts ...sessions.ReadOption) ([]*Session, error) {
	var (
		sums []*Session
		cur  *Session
		b    explain.TreeBuilder
	)
	err := explain.Walk(r, explain.Visitor{
		Begin: func(s sessions.Session) error {
			cur = &Session{Session: s}
			return nil
		},
		Record: func(kr sessions.KindRecord) error {
			if err := b.Add(kr); err != nil { // a tree holds a few words a record
				return err
			}
			if i, _ := slices.BinarySearchFunc(cur.Slowest, kr, bySlowest); i < o.Slowest {
				kr.Record = Compact(kr.Record) // a copy of its own, without the attributes
				cur.Slowest = keepSlowest(cur.Slowest, kr, o.Slowest)
			}
			return nil
		},
		End: func(sessions.Session) error {
			t := b.Tree()
			cur.Summary = t.Summary()
			cur.Path = t.CriticalPath()
			cur.Requests = t.Requests()
			var err error
			if cur.Hits, cur.Tallied, err = hitRates(r, t, cur.ID); err != nil {
				return err
			}
			if cur.Named, err = NameSteps(r, t, MostCritical(cur.Path, o.Named)); err != nil {
				return err
			}
			sums = append(sums, cur)
			return nil
		},
	}, opts...)
	return sums, err
}

// hitRates returns the hit rates of a session's kinds but marks (phases a
// program names, as records cost leaves them out), from its tree and its
// tally, and whether it has a tally.
func hitRates(r *sessions.Records, t *explain.SessionTree, id sessions.SessionID) ([]tallied.KindRate, bool, error) {
	hits, misses := map[string]int64{}, map[string]int64{}
	for n := range t.Nodes() {
		if t.Kind(n) == sessions.MarksKind { // phases a program names, not lookups
			continue
		}
		if n.Verdict() == explain.Hit {
			hits[t.Kind(n)]++
		} else {
			misses[t.Kind(n)]++
		}
	}
	tally, ok, err := tallies.Read(r, id)
	sum := tallied.New(nil)
	sum.Add(tally, ok)
	rates := tallied.KindRates(hits, misses, sum)
	rates = slices.DeleteFunc(rates, func(k tallied.KindRate) bool { return k.Kind == sessions.MarksKind })
	return rates, ok, err
}

// keepSlowest adds kr to the slowest records, slowest first, if it is
// among the top; equal walls keep stamp order, so output is stable.
func keepSlowest(slowest []sessions.KindRecord, kr sessions.KindRecord, top int) []sessions.KindRecord {
	i, _ := slices.BinarySearchFunc(slowest, kr, bySlowest)
	if i >= top {
		return slowest
	}
	slowest = slices.Insert(slowest, i, kr)
	if len(slowest) > top {
		slowest = slowest[:top]
	}
	return slowest
}

// bySlowest orders records by wall time, longest first, then in stamp
// order.
func bySlowest(a, b sessions.KindRecord) int {
	if c := cmp.Compare(b.Record.Wall, a.Record.Wall); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Stamp.Seq, b.Stamp.Seq); c != 0 {
		return c
	}
	return cmp.Compare(a.Kind, b.Kind)
}

// MostCritical returns the steps of a critical path that held the session
// up most, at most n, in path order: all of them when the path has no
// more.
func MostCritical(path []explain.Step, n int) []explain.Step {
	if len(path) <= n {
		return path
	}
	byCritical := slices.Clone(path)
	slices.SortStableFunc(byCritical, func(a, b explain.Step) int { return cmp.Compare(b.Critical, a.Critical) })
	keep := make(map[uint64]bool, n)
	for _, st := range byCritical[:n] {
		keep[st.Seq] = true
	}
	return slices.DeleteFunc(slices.Clone(path), func(st explain.Step) bool { return !keep[st.Seq] })
}

// NameSteps returns the steps of t's critical path with their records'
// kinds, names (Name), times and depths.
func NameSteps(r *sessions.Records, t *explain.SessionTree, steps []explain.Step) ([]Step, error) {
	named := make([]Step, len(steps))
	for i, st := range steps {
		n := t.BySeq(st.Seq)
		name, err := Name(r, t, n)
		if err != nil {
			return nil, err
		}
		named[i] = Step{Step: st, Kind: t.Kind(n), Name: name, Offset: n.Offset, Wall: n.Wall, Depth: int(n.Depth)}
	}
	return named, nil
}
