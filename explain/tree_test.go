package explain_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// treeOf records spans in a store and reads their session's tree back.
func treeOf(t testing.TB, spans []span) *explain.SessionTree {
	t.Helper()
	store := &sliceStore{}
	id := record(store, spans)
	tree, err := explain.Tree(sessions.NewRecords(store), id)
	if err != nil {
		t.Fatalf("Tree: %v", err)
	}
	if tree.ID != id || tree.Len() != len(spans) {
		t.Fatalf("Tree: session %s with %d records, want %s with %d", tree.ID, tree.Len(), id, len(spans))
	}
	return tree
}

// placement is where a test expects a record: its parent's seq (-1 for a
// root) and its depth.
type placement struct {
	parent int
	depth  int
}

// placements returns where the tree put each record, by seq.
func placements(tree *explain.SessionTree) []placement {
	out := make([]placement, tree.Len())
	for n := range tree.Walk() {
		p := placement{parent: -1, depth: int(n.Depth)}
		if parent := tree.Parent(n); parent != nil {
			p.parent = int(parent.Seq)
			if n.Depth != parent.Depth+1 {
				panic(fmt.Sprintf("seq %d: depth %d, parent's %d", n.Seq, n.Depth, parent.Depth))
			}
		}
		out[n.Seq] = p
	}
	return out
}

func seqs(nodes func(func(*explain.Node) bool)) []uint64 {
	var out []uint64
	for n := range nodes {
		out = append(out, n.Seq)
	}
	return out
}

// Four clients served at once: their request spans overlap in time, each
// in a trace of its own with the same span ids. They are four roots side
// by side, each with its own query under it — not nested by time.
func TestConcurrentRootsAreSiblings(t *testing.T) {
	var spans []span
	for c := range 4 {
		spans = append(spans, span{kind: "request", name: fmt.Sprint("client ", c),
			at: time.Duration(c) * 10 * time.Millisecond, wall: 100 * time.Millisecond, id: 1, trace: uint64(c + 1)})
	}
	for c := range 4 {
		spans = append(spans, span{kind: "query", name: fmt.Sprint("query ", c),
			at: time.Duration(c)*10*time.Millisecond + 45*time.Millisecond, wall: 10 * time.Millisecond, id: 2, parent: 1, trace: uint64(c + 1)})
	}
	tree := treeOf(t, spans)
	if got, want := seqs(tree.Roots()), []uint64{0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("roots: %v, want %v", got, want)
	}
	want := []placement{{-1, 0}, {-1, 0}, {-1, 0}, {-1, 0}, {0, 1}, {1, 1}, {2, 1}, {3, 1}}
	if got := placements(tree); !slices.Equal(got, want) {
		t.Errorf("placements: %v, want %v", got, want)
	}
	if got, want := seqs(tree.Walk()), []uint64{0, 4, 1, 5, 2, 6, 3, 7}; !slices.Equal(got, want) {
		t.Errorf("walk: %v, want %v", got, want)
	}
}

// A record hangs under a record of its parent span only when that span
// was recorded in the session, before it; records without a span id are
// roots.
func TestRootsWhenTheParentIsMissing(t *testing.T) {
	tree := treeOf(t, []span{
		{kind: "marks", name: "load", wall: 10, id: 1},
		{kind: "compile", name: "parent not recorded", at: 1, wall: 2, id: 2, parent: 99},
		{kind: "compile", name: "written by code", at: 2, wall: 2},
		{kind: "compile", name: "parent in another trace", at: 3, wall: 2, id: 3, parent: 1, trace: 2},
		{kind: "compile", name: "under load", at: 4, wall: 2, id: 4, parent: 1},
		{kind: "compile", name: "under a later record", at: 5, wall: 1, id: 5, parent: 6},
		{kind: "compile", name: "under the record before", at: 5, wall: 1, id: 6, parent: 5},
		{kind: "compile", name: "a second span 4", at: 6, wall: 1, id: 4, parent: 1},
		{kind: "compile", name: "under span 4", at: 7, wall: 1, id: 7, parent: 4},
	})
	want := []placement{{-1, 0}, {-1, 0}, {-1, 0}, {-1, 0}, {0, 1}, {-1, 0}, {5, 1}, {0, 1}, {4, 2}}
	if got := placements(tree); !slices.Equal(got, want) {
		t.Errorf("placements: %v, want %v", got, want)
	}
}

// randomSpans makes n spans, each under a random earlier one, a span that
// was not recorded, or nothing, and returns each one's expected parent.
func randomSpans(rng *rand.Rand, n int) ([]span, []int) {
	spans := make([]span, n)
	parents := make([]int, n)
	for i := range spans {
		spans[i] = span{kind: fmt.Sprint("k", rng.IntN(5)), name: fmt.Sprint("r", i),
			at: time.Duration(i), wall: time.Duration(rng.IntN(100)), id: uint64(i + 1)}
		parents[i] = -1
		switch x := rng.IntN(10); {
		case x == 0:
			spans[i].id = 0 // written by code
		case x == 1:
			spans[i].parent = uint64(n + 1 + i) // not recorded
		case x < 9 && i > 0:
			p := rng.IntN(i)
			if spans[p].id != 0 {
				spans[i].parent, parents[i] = spans[p].id, p
			}
		}
	}
	return spans, parents
}

// The tree, the pre-order walk and the streaming nest agree with the tree
// the spans were made from.
func TestTreeMatchesTheSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		n := 1 + rng.IntN(200)
		spans, parents := randomSpans(rng, n)
		tree := treeOf(t, spans)

		// Expected: depths from parents, pre-order by a plain recursive
		// walk of children lists (the data here is small).
		depth := make([]int, n)
		children := make([][]int, n+1) // children[n] are the roots
		for i, p := range parents {
			if p < 0 {
				children[n] = append(children[n], i)
			} else {
				depth[i] = depth[p] + 1
				children[p] = append(children[p], i)
			}
		}
		var pre []uint64
		var walk func(int)
		walk = func(i int) {
			for _, c := range children[i] {
				pre = append(pre, uint64(c))
				walk(c)
			}
		}
		walk(n)

		got := placements(tree)
		for i := range n {
			if want := (placement{parents[i], depth[i]}); got[i] != want {
				t.Fatalf("seq %d: %v, want %v", i, got[i], want)
			}
		}
		if got := seqs(tree.Walk()); !slices.Equal(got, pre) {
			t.Fatalf("walk: %v, want %v", got, pre)
		}
		for i := range n {
			node := tree.BySeq(uint64(i))
			if node == nil || name(tree, node) != spans[i].name {
				t.Fatalf("BySeq(%d): %v", i, node)
			}
			var kids []uint64
			for c := range tree.Children(node) {
				kids = append(kids, c.Seq)
			}
			var want []uint64
			for _, c := range children[i] {
				want = append(want, uint64(c))
			}
			if !slices.Equal(kids, want) {
				t.Fatalf("children of %d: %v, want %v", i, kids, want)
			}
			if next := tree.NextSibling(node); next != nil && tree.Parent(next) != tree.Parent(node) {
				t.Fatalf("next sibling of %d has another parent", i)
			}
		}

		// Nest places the same records the same way, in stamp order.
		i := 0
		for node, err := range explain.Nest(slices2(readAll(t, spans))) {
			if err != nil {
				t.Fatal(err)
			}
			want := placement{-1, 0}
			if node.Depth > 0 {
				want.parent = int(node.ParentSeq)
			}
			want.depth = node.Depth
			if node.Stamp.Seq != uint64(i) || got[i] != want {
				t.Fatalf("Nest %d: seq %d at %v, want %v", i, node.Stamp.Seq, want, got[i])
			}
			i++
		}
		if i != n {
			t.Fatalf("Nest yielded %d records, want %d", i, n)
		}
	}
}

// One Nesting places a read of several sessions: each starts afresh, so a
// span id of one session is no parent in the next.
func TestNestingStartsEachSessionAfresh(t *testing.T) {
	rec := func(session sessions.SessionID, seq, id, parent uint64) sessions.KindRecord {
		return sessions.KindRecord{Kind: "k", Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: session, Seq: seq},
			Record: sessions.Record{SpanID: spanID(id), ParentSpanID: spanID(parent)},
		}}
	}
	var ns explain.Nesting
	for _, c := range []struct {
		kr    sessions.KindRecord
		depth int
	}{
		{rec(1, 0, 1, 0), 0},
		{rec(1, 1, 2, 1), 1},
		{rec(2, 0, 3, 2), 0}, // span 2 was in session 1
		{rec(2, 1, 4, 3), 1},
	} {
		if n := ns.Place(c.kr); n.Depth != c.depth {
			t.Errorf("session %s seq %d: depth %d, want %d", c.kr.Stamp.Session, c.kr.Stamp.Seq, n.Depth, c.depth)
		}
	}
}

func TestBuildTreeRefusesTwoSessions(t *testing.T) {
	records := func(yield func(sessions.KindRecord, error) bool) {
		_ = yield(sessions.KindRecord{Kind: "k", Stamped: sessions.Stamped[sessions.Record]{Stamp: sessions.Stamp{Session: 1}}}, nil) &&
			yield(sessions.KindRecord{Kind: "k", Stamped: sessions.Stamped[sessions.Record]{Stamp: sessions.Stamp{Session: 2}}}, nil)
	}
	if _, err := explain.BuildTree(records); err == nil {
		t.Error("BuildTree of two sessions: no error")
	}
}

// A damaged store may give seqs out of order, or one seq twice: the tree
// is still built, and BySeq still finds them.
func TestTreeOfSeqsOutOfOrder(t *testing.T) {
	kr := func(seq, id, parent uint64) sessions.KindRecord {
		return sessions.KindRecord{Kind: "k", Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: 7, Seq: seq},
			Record: sessions.Record{Name: fmt.Sprint(seq, "/", id), SpanID: spanID(id), ParentSpanID: spanID(parent)},
		}}
	}
	records := []sessions.KindRecord{kr(5, 1, 0), kr(2, 2, 1), kr(9, 3, 2), kr(2, 4, 0)}
	tree, err := explain.BuildTree(func(yield func(sessions.KindRecord, error) bool) {
		for _, r := range records {
			if !yield(r, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]string{5: "5/1", 2: "2/2", 9: "9/3"} {
		if n := tree.BySeq(seq); n == nil || name(tree, n) != want {
			t.Errorf("BySeq(%d) = %v, want %s", seq, n, want)
		}
	}
	if n := tree.BySeq(3); n != nil {
		t.Errorf("BySeq(3) = %v, want nil", n)
	}
	if got, want := seqs(tree.Walk()), []uint64{5, 2, 9, 2}; !slices.Equal(got, want) {
		t.Errorf("walk: %v, want %v", got, want)
	}
}

// Nesting ten thousand deep: every depth once, the walk in stamp order,
// and no stack that grows with the data (a recursion 10,000 deep would
// pass too, on Go's growable stacks, so the bound is checked below by the
// memory each shape costs).
func TestDeepNesting(t *testing.T) {
	const n = 10_000
	tree := treeOf(t, deep(n))
	i := 0
	for node := range tree.Walk() {
		if node.Seq != uint64(i) || int(node.Depth) != i {
			t.Fatalf("walk %d: seq %d depth %d", i, node.Seq, node.Depth)
		}
		i++
	}
	if i != n {
		t.Fatalf("walked %d records, want %d", i, n)
	}
}

// bytesPerRecord returns what building the tree of records allocates, per
// record.
func bytesPerRecord(records []sessions.KindRecord) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tree, err := explain.BuildTree(slices2(records))
	if err != nil {
		panic(err)
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tree)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(records))
}

func slices2(records []sessions.KindRecord) func(func(sessions.KindRecord, error) bool) {
	return func(yield func(sessions.KindRecord, error) bool) {
		for _, kr := range records {
			if !yield(kr, nil) {
				return
			}
		}
	}
}

// readAll reads a session of spans back from a store, in stamp order.
func readAll(t testing.TB, spans []span) []sessions.KindRecord {
	store := &sliceStore{}
	id := record(store, spans)
	var out []sessions.KindRecord
	for kr, err := range explain.InStampOrder(sessions.NewRecords(store), id, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, kr)
	}
	return out
}

// Whatever the shape, a tree costs about the same per record: ten times
// the records cost ten times the memory, not a hundred, and nesting costs
// no more than a flat list.
func TestTreeMemoryFollowsRecords(t *testing.T) {
	flatPer := bytesPerRecord(readAll(t, flat(20_000)))
	for name, spans := range map[string][2][]span{
		"deep":  {deep(1_000), deep(10_000)},
		"kinds": {manyKinds(1_000), manyKinds(10_000)},
		"flat":  {flat(1_000), flat(10_000)},
	} {
		small, large := bytesPerRecord(readAll(t, spans[0])), bytesPerRecord(readAll(t, spans[1]))
		t.Logf("%s: %.0f B/record at %d records, %.0f at %d", name, small, len(spans[0]), large, len(spans[1]))
		if large > 2*small || large > 2*flatPer {
			t.Errorf("%s: %.0f B/record at %d records, %.0f at %d, flat %.0f", name, small, len(spans[0]), large, len(spans[1]), flatPer)
		}
	}
}

// A reader that goes through many sessions in one pass (the CLI's
// visitors) builds each one's tree with a TreeBuilder, the same tree Tree
// reads.
func TestTreeBuilderOverSessions(t *testing.T) {
	store := sessions.NewMemStore()
	rng := rand.New(rand.NewPCG(7, 8))
	var ids []sessions.SessionID
	for s := range 3 {
		spans, _ := randomSpans(rng, 50)
		ids = append(ids, recordAt(store, epoch.Add(time.Duration(s)*time.Hour), spans))
		store = store.Reopen()
	}
	r := sessions.NewRecords(store)
	var b explain.TreeBuilder
	var built []*explain.SessionTree
	for kr, err := range r.InStampOrder(nil) {
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Add(kr); err != nil {
			built = append(built, b.Tree())
			if err := b.Add(kr); err != nil {
				t.Fatal(err)
			}
		}
	}
	built = append(built, b.Tree())
	if len(built) != len(ids) {
		t.Fatalf("%d trees, want %d", len(built), len(ids))
	}
	for i, id := range ids {
		want, err := explain.Tree(r, id)
		if err != nil {
			t.Fatal(err)
		}
		got := built[i]
		if got.ID != id || got.Len() != want.Len() {
			t.Fatalf("tree %d: session %s of %d records, want %s of %d", i, got.ID, got.Len(), id, want.Len())
		}
		if !slices.Equal(placements(got), placements(want)) || !slices.Equal(seqs(got.Walk()), seqs(want.Walk())) {
			t.Errorf("session %s: the builder's tree differs from Tree's", id)
		}
	}
	if empty := b.Tree(); empty.Len() != 0 || seqs(empty.Walk()) != nil {
		t.Errorf("a builder given nothing built %d records", empty.Len())
	}
}
