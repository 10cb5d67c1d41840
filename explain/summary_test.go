package explain_test

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// kindSummary returns the summary of one kind, or fails.
func kindSummary(t *testing.T, s explain.Summary, kind string) explain.KindSummary {
	t.Helper()
	for _, k := range s.Kinds {
		if k.Kind == kind {
			return k
		}
	}
	t.Fatalf("no kind %q in %+v", kind, s)
	return explain.KindSummary{}
}

// Nested marks and overlapping requests are counted once each: a kind's
// wall is the time at least one of its records was open.
func TestSummaryCountsTimeOnce(t *testing.T) {
	ms := time.Millisecond
	tree := treeOf(t, []span{
		{kind: "marks", name: "build", at: 0, wall: 100 * ms, id: 1},
		{kind: "request", name: "client 0", at: 5 * ms, wall: 100 * ms, id: 10, trace: 2},
		{kind: "marks", name: "plan", at: 10 * ms, wall: 40 * ms, id: 2, parent: 1},
		{kind: "request", name: "client 1", at: 15 * ms, wall: 100 * ms, id: 10, trace: 3},
		{kind: "marks", name: "plan turn 7", at: 20 * ms, wall: 10 * ms, id: 3, parent: 2},
		{kind: "compile", name: "matmul", at: 25 * ms, wall: 50 * ms, id: 4, parent: 1},
		{kind: "request", name: "client 2", at: 25 * ms, wall: 100 * ms, id: 10, trace: 4},
		{kind: "request", name: "client 3", at: 35 * ms, wall: 100 * ms, id: 10, trace: 5},
		{kind: "marks", name: "written by code", at: 90 * ms, wall: 30 * ms},
		{kind: "request", name: "later", at: 200 * ms, wall: 10 * ms, id: 11, trace: 6},
	})
	s := tree.Summary()
	if s.ID != tree.ID || s.Records != 10 || s.Start != 0 || s.End != 210*ms || s.Duration() != 210*ms {
		t.Errorf("summary: %+v", s)
	}
	for _, want := range []explain.KindSummary{
		{Kind: "compile", Records: 1, Wall: 50 * ms},
		{Kind: "marks", Records: 4, Wall: 120 * ms},   // [0, 100) and [90, 120)
		{Kind: "request", Records: 5, Wall: 140 * ms}, // [5, 135) and [200, 210)
	} {
		if got := kindSummary(t, s, want.Kind); got != want {
			t.Errorf("%s: %+v, want %+v", want.Kind, got, want)
		}
	}
	if !slices.IsSortedFunc(s.Kinds, func(a, b explain.KindSummary) int { return cmp.Compare(a.Kind, b.Kind) }) {
		t.Errorf("kinds out of order: %+v", s.Kinds)
	}
}

// Against a count of the ticks each kind covers, on random records given
// in any order.
func TestSummaryMatchesTicks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		n := 1 + rng.IntN(100)
		var records []sessions.KindRecord
		covered := map[string]map[int]bool{}
		counts := map[string]int{}
		first, last := math.MaxInt, 0
		for i := range n {
			kind := []string{"a", "b", "c"}[rng.IntN(3)]
			at, wall := rng.IntN(1000), rng.IntN(50)
			records = append(records, sessions.KindRecord{Kind: kind, Stamped: sessions.Stamped[sessions.Record]{
				Stamp:  sessions.Stamp{Session: 9, Seq: uint64(i), Offset: time.Duration(at)},
				Record: sessions.Record{Wall: time.Duration(wall)},
			}})
			if covered[kind] == nil {
				covered[kind] = map[int]bool{}
			}
			for tick := at; tick < at+wall; tick++ {
				covered[kind][tick] = true
			}
			counts[kind]++
			first, last = min(first, at), max(last, at+wall)
		}
		rng.Shuffle(len(records), func(i, j int) { records[i], records[j] = records[j], records[i] })
		var tally explain.Tally
		for _, kr := range records {
			tally.Add(kr)
		}
		s := tally.Summary()
		if s.ID != 9 || s.Records != n || s.Start != time.Duration(first) || s.End != time.Duration(last) {
			t.Fatalf("summary %+v, want %d records from %d to %d", s, n, first, last)
		}
		if len(s.Kinds) != len(counts) {
			t.Fatalf("%d kinds, want %d", len(s.Kinds), len(counts))
		}
		for _, k := range s.Kinds {
			if k.Records != counts[k.Kind] || k.Wall != time.Duration(len(covered[k.Kind])) {
				t.Fatalf("%s: %+v, want %d records, wall %d", k.Kind, k, counts[k.Kind], len(covered[k.Kind]))
			}
		}
	}
}

// A damaged record's wall, negative or past what a Duration holds, does
// not make a negative or wrapped total.
func TestSummaryOfDamagedWalls(t *testing.T) {
	var tally explain.Tally
	for i, wall := range []time.Duration{-5, math.MaxInt64, math.MaxInt64, 3} {
		tally.Add(sessions.KindRecord{Kind: "k", Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: 1, Seq: uint64(i), Offset: time.Duration(10 * (i + 1))},
			Record: sessions.Record{Wall: wall},
		}})
	}
	s := tally.Summary()
	if s.End != math.MaxInt64 || s.Kinds[0].Wall != math.MaxInt64-20 || s.Duration() != math.MaxInt64-10 {
		t.Errorf("summary: %+v, duration %d", s, s.Duration())
	}
	var empty explain.Tally
	if s := empty.Summary(); s.Records != 0 || len(s.Kinds) != 0 || s.Duration() != 0 {
		t.Errorf("empty summary: %+v", s)
	}
}
