package explain_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// pathOf returns a critical path as seq:critical pairs, for messages.
func pathOf(steps []explain.Step) map[uint64]time.Duration {
	m := map[uint64]time.Duration{}
	for _, s := range steps {
		m[s.Seq] = s.Critical
	}
	return m
}

func stepSeqs(steps []explain.Step) []uint64 {
	var out []uint64
	for _, s := range steps {
		out = append(out, s.Seq)
	}
	return out
}

// A fan-out worked by hand. R runs 0-100 and fans out to A (0-30), B
// (10-60, with B1 inside), C (40-90, with C1 45-50 and C2 50-85) and D
// (70-80); S (20-40) is a concurrent root. From the end: R to 100, C ends
// last within it (90), C2 last within C (85), then C1, which ended as C2
// started (50); back in C from 45 to its start, 40; back in R, B (60) and
// D (80) did not end by 40, A did (30); A runs from 0. S ran beside R.
func TestCriticalPathOfAFanOut(t *testing.T) {
	tree := treeOf(t, []span{
		{kind: "marks", name: "R", at: 0, wall: 100, id: 1},           // 0
		{kind: "step", name: "A", at: 0, wall: 30, id: 2, parent: 1},  // 1
		{kind: "step", name: "B", at: 10, wall: 50, id: 3, parent: 1}, // 2
		{kind: "work", name: "B1", at: 15, wall: 40, id: 4, parent: 3},
		{kind: "request", name: "S", at: 20, wall: 20, id: 9, trace: 2}, // 4
		{kind: "step", name: "C", at: 40, wall: 50, id: 5, parent: 1},   // 5
		{kind: "work", name: "C1", at: 45, wall: 5, id: 6, parent: 5},   // 6
		{kind: "work", name: "C2", at: 50, wall: 35, id: 7, parent: 5},  // 7
		{kind: "step", name: "D", at: 70, wall: 10, id: 8, parent: 1},   // 8
	})
	want := []explain.Step{{0, 20}, {1, 30}, {5, 10}, {6, 5}, {7, 35}}
	if got := tree.CriticalPath(); !slices.Equal(got, want) {
		t.Errorf("critical path: %v, want %v", got, want)
	}
}

// Overlapping children: B started while A ran and ended last, so the path
// is B, then the parent's own time back to where B started; A, which had
// not ended by then, ran beside it.
func TestCriticalPathOfOverlappingChildren(t *testing.T) {
	tree := treeOf(t, []span{
		{kind: "marks", name: "P", at: 0, wall: 10, id: 1},
		{kind: "step", name: "A", at: 0, wall: 8, id: 2, parent: 1},
		{kind: "step", name: "B", at: 5, wall: 5, id: 3, parent: 1},
	})
	if got, want := tree.CriticalPath(), []explain.Step{{0, 5}, {2, 5}}; !slices.Equal(got, want) {
		t.Errorf("critical path: %v, want %v", got, want)
	}
}

// Phases back to back are all on the path, whole, in time order; a child
// that outlived its parent (work left running) is followed to its end.
func TestCriticalPathOfPhasesAndLeftovers(t *testing.T) {
	tree := treeOf(t, []span{
		{kind: "marks", name: "load", at: 0, wall: 10, id: 1},
		{kind: "marks", name: "plan", at: 10, wall: 20, id: 2},
		{kind: "flush", name: "left running", at: 15, wall: 25, id: 3, parent: 2},
		{kind: "marks", name: "serve", at: 30, wall: 5, id: 4},
	})
	want := []explain.Step{{0, 10}, {1, 5}, {2, 25}}
	if got := tree.CriticalPath(); !slices.Equal(got, want) {
		t.Errorf("critical path: %v, want %v", got, want)
	}
}

// Concurrent roots: the request that ended last bounded the session.
func TestCriticalPathOfConcurrentRoots(t *testing.T) {
	var spans []span
	for c := range 4 {
		spans = append(spans, span{kind: "request", at: time.Duration(c) * 10, wall: 100, id: 1, trace: uint64(c + 1)})
	}
	if got, want := treeOrEmpty(t, spans).CriticalPath(), []explain.Step{{3, 100}}; !slices.Equal(got, want) {
		t.Errorf("critical path: %v, want %v", got, want)
	}
	if got := treeOrEmpty(t, nil).CriticalPath(); got != nil {
		t.Errorf("critical path of nothing: %v", got)
	}
}

func treeOrEmpty(t *testing.T, spans []span) *explain.SessionTree {
	t.Helper()
	if len(spans) == 0 {
		tr, err := explain.BuildTree(func(func(sessions.KindRecord, error) bool) {})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	return treeOf(t, spans)
}

// refPath is the critical path as Jaeger's recursion finds it, on the
// spans themselves rather than a SessionTree: a reference for random
// trees.
type refPath struct {
	start, end []time.Duration // end: the latest end under the span
	parent     []int
	kids       [][]int // in stamp order; kids[len] are the roots
	chosen     map[int]bool
	crit       map[int]time.Duration
	found      []int
}

func newRefPath(spans []span, parents []int) *refPath {
	n := len(spans)
	r := &refPath{start: make([]time.Duration, n), end: make([]time.Duration, n), parent: parents,
		kids: make([][]int, n+1), chosen: map[int]bool{}, crit: map[int]time.Duration{}}
	for i, s := range spans {
		r.start[i], r.end[i] = s.at, s.at+s.wall
	}
	var reach func(i int) time.Duration
	reach = func(i int) time.Duration {
		e := r.end[i]
		for j := range spans {
			if parents[j] == i {
				e = max(e, reach(j))
			}
		}
		return e
	}
	for i := range spans {
		r.end[i] = reach(i)
		p := parents[i]
		if p < 0 {
			p = n
		}
		r.kids[p] = append(r.kids[p], i)
	}
	return r
}

// pick returns the child of cur (the roots for n) not yet chosen that
// ended last by at, the longest on a tie.
func (r *refPath) pick(cur int, at time.Duration) int {
	best := -1
	for _, c := range r.kids[cur] {
		if r.chosen[c] || r.end[c] > at {
			continue
		}
		if best < 0 || r.end[c] > r.end[best] || r.end[c] == r.end[best] && r.start[c] < r.start[best] {
			best = c
		}
	}
	return best
}

func (r *refPath) walk(cur int, at time.Duration) {
	n := len(r.start)
	if c := r.pick(cur, at); c >= 0 {
		if cur < n {
			r.crit[cur] += at - r.end[c]
		}
		r.chosen[c] = true
		r.found = append(r.found, c)
		r.walk(c, r.end[c])
		return
	}
	if cur == n {
		return
	}
	if s := r.start[cur]; s < at {
		r.crit[cur] += at - s
		at = s
	}
	p := r.parent[cur]
	if p < 0 {
		p = n
	}
	r.walk(p, at)
}

// steps returns the path in pre-order of the spans' own tree, siblings in
// the order they ran: those on the path never overlap, so by end, then by
// start (a zero wall one ended where the next began), and records of no
// wall at one instant in reverse stamp order, the order the walk met them.
func (r *refPath) steps() []explain.Step {
	n := len(r.start)
	var end time.Duration
	for _, i := range r.kids[n] {
		end = max(end, r.end[i])
	}
	r.walk(n, end)
	pre := map[int]int{}
	var dfs func(int)
	dfs = func(i int) {
		kids := slices.Clone(r.kids[i])
		slices.SortFunc(kids, func(a, b int) int {
			if c := cmp.Compare(r.end[a], r.end[b]); c != 0 {
				return c
			}
			if c := cmp.Compare(r.start[a], r.start[b]); c != 0 {
				return c
			}
			return cmp.Compare(b, a)
		})
		for _, c := range kids {
			pre[c] = len(pre)
			dfs(c)
		}
	}
	dfs(n)
	slices.SortFunc(r.found, func(a, b int) int { return cmp.Compare(pre[a], pre[b]) })
	var out []explain.Step
	for _, i := range r.found {
		out = append(out, explain.Step{Seq: uint64(i), Critical: r.crit[i]})
	}
	return out
}

// On random trees the path is Jaeger's, siblings on it come in time
// order, and its steps add up to the time from where it starts to the
// session's end.
func TestCriticalPathMatchesTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := 1 + rng.IntN(40)
		spans, parents := randomSpans(rng, n)
		for i := range spans {
			// Children start within their parent, mostly, and may end
			// after it.
			spans[i].at = time.Duration(rng.IntN(100))
			if p := parents[i]; p >= 0 {
				spans[i].at = spans[p].at + time.Duration(rng.IntN(int(spans[p].wall)+2))
			}
		}
		tr := treeOf(t, spans)
		got := tr.CriticalPath()
		want := newRefPath(spans, parents).steps()
		if !slices.Equal(got, want) {
			t.Fatalf("critical path of %v:\n got %v\nwant %v", spans, got, want)
		}
		var sum time.Duration
		for i, s := range got {
			sum += s.Critical
			if i > 0 {
				prev, cur := tr.BySeq(got[i-1].Seq), tr.BySeq(s.Seq)
				if cur.Depth > prev.Depth+1 {
					t.Fatalf("step %d at depth %d after depth %d: not pre-order", i, cur.Depth, prev.Depth)
				}
			}
		}
		if s := tr.Summary(); sum > s.End-s.Start {
			t.Fatalf("path of %v adds up to %v, more than the session's %v", got, sum, s.End-s.Start)
		}
	}
}

// Ten thousand deep: the whole chain is the path, one step a level.
func TestCriticalPathOfDeepNesting(t *testing.T) {
	const n = 10_000
	got := treeOf(t, deep(n)).CriticalPath()
	if len(got) != n {
		t.Fatalf("%d steps, want %d", len(got), n)
	}
	var sum time.Duration
	for i, s := range got {
		if s.Seq != uint64(i) {
			t.Fatalf("step %d is seq %d", i, s.Seq)
		}
		sum += s.Critical
	}
	if want := time.Duration(2*n - 1); sum != want {
		t.Errorf("path adds up to %v, want %v", sum, want)
	}
	// Roots 3 long, one a tick: each one that ended as the next on the
	// path began is on it, back from the last.
	var want []uint64
	for seq := uint64(0); seq < 1000; seq += 3 {
		want = append(want, seq)
	}
	if got := stepSeqs(treeOf(t, flat(1000)).CriticalPath()); !slices.Equal(got, want) {
		t.Errorf("flat: %v, want %v", got, want)
	}
}

// A server's session: requests (each its own trace) one after another and
// side by side, each a request span with a lookup inside. The path is one
// request's, the longest: never a chain of requests that happened to
// follow one another in time. Its first step is the root it starts from.
func TestCriticalPathOfAServerSession(t *testing.T) {
	var spans []span
	for r := range 40 {
		at, wall := time.Duration(r)*10, time.Duration(8)
		if r == 17 {
			wall = 30 // the slow request, overlapping the next ones
		}
		id := uint64(2*r + 1)
		spans = append(spans,
			span{kind: "marks", name: "GET /lookup", at: at, wall: wall, id: id, trace: uint64(r + 1)},
			span{kind: "lookup", name: "lookup", at: at + 1, wall: wall - 2, id: id + 1, parent: id, trace: uint64(r + 1)})
	}
	got := treeOf(t, spans).CriticalPath()
	if want := []explain.Step{{34, 2}, {35, 28}}; !slices.Equal(got, want) {
		t.Errorf("critical path: %v, want %v: the slow request alone", got, want)
	}
	// Of requests as long as one another, the one that ended last.
	got = treeOf(t, spans[:10]).CriticalPath()
	if want := []explain.Step{{8, 2}, {9, 6}}; !slices.Equal(got, want) {
		t.Errorf("critical path of equal requests: %v, want %v: the last", got, want)
	}
}

// A build's phases, each a root of a trace of its own (a program that
// starts every phase from context.Background), are one program, not
// requests: they chain as siblings do, and the path spans the build.
func TestCriticalPathOfPhasesInTracesOfTheirOwn(t *testing.T) {
	var spans []span
	for p := range 3 {
		spans = append(spans, span{kind: "marks", name: fmt.Sprint("phase ", p), at: time.Duration(p) * 10, wall: 10, id: uint64(p + 1), trace: uint64(p + 1), internal: true})
	}
	if got, want := treeOf(t, spans).CriticalPath(), []explain.Step{{0, 10}, {1, 10}, {2, 10}}; !slices.Equal(got, want) {
		t.Errorf("critical path: %v, want %v: every phase, in order", got, want)
	}
	// The same roots as a server's requests: one request, the last.
	for i := range spans {
		spans[i].internal = false
	}
	if got, want := treeOf(t, spans).CriticalPath(), []explain.Step{{2, 10}}; !slices.Equal(got, want) {
		t.Errorf("critical path of requests: %v, want %v", got, want)
	}
}
