package explain_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// lookupSpans is a server's request in the usual shape: the request, a
// lookup inside it (observed) of key, and on a miss a compile inside the
// lookup (changed). ids start at id; every request is a trace of its own.
func lookupSpans(run int, at time.Duration, key string, miss bool, id uint64) []span {
	ms := time.Millisecond
	out := []span{
		{kind: "marks", name: "GET /lookup", at: at, wall: 3 * ms, id: id, trace: id, observed: true,
			attrs: sessions.Attrs{str("network.peer.port", fmt.Sprint(40000+id)), str("server.port", fmt.Sprint(8000+run))}},
		{kind: "lookup", name: "lookup", at: at, wall: 2 * ms, id: id + 1, parent: id, trace: id, internal: true, observed: true,
			attrs: sessions.Attrs{str("cache.key", key)}},
	}
	if miss {
		out = append(out, span{kind: "compile", name: "compile", at: at, wall: ms, id: id + 2, parent: id + 1, trace: id, internal: true,
			attrs: sessions.Attrs{str("compile.key", key)}})
	}
	return out
}

// serverStore records runs of a server, each a session: in each, every
// key misses once, then hits hits times.
func serverStore(runs int, keys []string, hits int) (*sessions.Records, []sessions.SessionID) {
	store := sessions.NewMemStore()
	var ids []sessions.SessionID
	for run := range runs {
		var spans []span
		id := uint64(1)
		for round := range hits + 1 {
			for _, k := range keys {
				spans = append(spans, lookupSpans(run, time.Duration(len(spans))*time.Millisecond, k, round == 0, id+uint64(run))...)
				id += 10
			}
		}
		ids = append(ids, recordAt(testsupport.NoClose{Store: store}, epoch.Add(time.Duration(run)*time.Hour), spans))
	}
	return sessions.NewRecords(store.Reopen()), ids
}

// A node is 48 bytes: what a tree of a million records holds per record,
// besides the names (issue 33).
func TestNodeSize(t *testing.T) {
	if got := unsafe.Sizeof(explain.Node{}); got != 48 {
		t.Errorf("a Node is %d bytes, want 48", got)
	}
}

// A lookup that compiled inside is a miss, one that did not a hit, the
// compile work; the request around a miss is a miss too, at any depth.
func TestVerdicts(t *testing.T) {
	r, ids := serverStore(1, []string{"k1"}, 2)
	tree, err := explain.Tree(r, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for n := range tree.Nodes() {
		got = append(got, tree.Kind(n)+" "+n.Verdict().String())
	}
	want := []string{
		"marks missed", "lookup missed", "compile changed",
		"marks hit", "lookup hit",
		"marks hit", "lookup hit",
	}
	if !slices.Equal(got, want) {
		t.Errorf("verdicts %q, want %q", got, want)
	}
	// What made a miss: the compile, for the lookup and its request.
	for _, seq := range []uint64{0, 1} {
		if c := tree.ChangeInside(tree.BySeq(seq)); c == nil || c.Seq != 2 {
			t.Errorf("ChangeInside(seq %d) = %v, want the compile, seq 2", seq, c)
		}
	}
	if c := tree.ChangeInside(tree.BySeq(4)); c != nil {
		t.Errorf("ChangeInside of a hit = %v, want nil", c)
	}
	if !explain.Miss.IsWork() || explain.Hit.IsWork() || !explain.Unknown.IsWork() {
		t.Error("a miss and an unknown record are work, a hit is not")
	}
}

// ChangeInside names the first record inside that changed, in stamp
// order, whatever the depth, across chunks of nodes: of three changes in
// a tree of 5,000 records, the first stamped.
func TestChangeInsideFindsTheFirst(t *testing.T) {
	var spans []span
	spans = append(spans, span{kind: "marks", name: "root", wall: 10000, id: 1, observed: true})
	for i := 2; i <= 5000; i++ {
		spans = append(spans, span{kind: "step", name: "s", at: time.Duration(i), wall: 1, id: uint64(i), parent: uint64(i - 1),
			observed: i != 3100 && i != 4000 && i != 4999})
	}
	tree := treeOf(t, spans)
	for _, c := range []struct{ seq, want uint64 }{{0, 3099}, {1500, 3099}, {3099, 3999}, {3999, 4998}} {
		n := tree.BySeq(c.seq)
		if got := tree.ChangeInside(n); got == nil || got.Seq != c.want {
			t.Errorf("ChangeInside(seq %d) = %v, want seq %d", c.seq, got, c.want)
		}
	}
	if got := tree.ChangeInside(tree.BySeq(4999)); got != nil {
		t.Errorf("ChangeInside of a leaf = %v", got)
	}
}

// why tells a lookup that missed from one that hit (issue 33: every
// lookup of k3 read "observed: the cache answered"), and says why a miss
// was work as of any work: the first run's is new, the second run's (the
// same process again, its cache in memory lost) forgotten.
func TestWhyMissed(t *testing.T) {
	r, _ := serverStore(2, []string{"k3"}, 3)
	var got []string
	for reason, err := range explain.Why(r, "lookup", "cache.key", sessions.StringValue("k3")) {
		if err != nil {
			t.Fatal(err)
		}
		s := string(reason.Cause) + " " + reason.Verdict.String()
		if reason.Inside != nil {
			s += fmt.Sprintf(" inside %s seq %d", reason.Inside.Kind, reason.Inside.Stamp.Seq)
		}
		got = append(got, s)
	}
	want := []string{
		"new missed inside compile seq 2", "observed hit", "observed hit", "observed hit",
		"forgotten missed inside compile seq 2", "observed hit", "observed hit", "observed hit",
	}
	if !slices.Equal(got, want) {
		t.Errorf("why lookup k3:\n%q\nwant\n%q", got, want)
	}
}

// cost counts a miss as work and only hits as hits; time in children
// that changed nothing is the hits' only.
func TestReworkMisses(t *testing.T) {
	r, ids := serverStore(2, []string{"k1", "k2"}, 4)
	var w explain.Rework
	if err := addSessions(&w, r, ids...); err != nil {
		t.Fatal(err)
	}
	for _, k := range w.Redone() {
		if k.Kind != "lookup" {
			continue
		}
		// Per run: a miss and four hits; the second run's miss redoes
		// the first's.
		if k.Records != 10 || k.Hits != 8 || k.Misses != 2 || k.Redos != 1 {
			t.Errorf("%s %v: %d records, %d hits, %d misses, %d redone; want 10, 8, 2, 1", k.Kind, k.Key, k.Records, k.Hits, k.Misses, k.Redos)
		}
	}
	for _, c := range w.Children() {
		if c.Parent == "marks" && c.Child == "lookup" && (c.Children != 20 || c.UnchangedChildren != 16 || c.Unchanged != 16*2*time.Millisecond) {
			t.Errorf("marks -> lookup: %+v; want 20 children, of which the 16 hits changed nothing", c)
		}
	}
}

// diff compares misses with misses and hits with hits, and leaves out,
// saying so, what names a connection or a listener: two runs that did
// the same are the same (issue 33: network.peer.port: 45774 -> 53556).
func TestDiffLeavesOutConnections(t *testing.T) {
	r, ids := serverStore(2, []string{"k1", "k2"}, 3)
	read := func(m explain.Match) explain.Comparison {
		var sides [2]*explain.Side
		for i, id := range ids {
			side, err := m.Read(r, nil, sessions.InSession(id))
			if err != nil {
				t.Fatal(err)
			}
			sides[i] = side
		}
		return explain.Diff(sides[0], sides[1])
	}
	c := read(explain.Match{})
	var got []string
	for _, k := range c.Keys {
		if k.Change != explain.Same {
			t.Errorf("%s %s %v: %s %v", k.Entry().Kind, k.Entry().Name, k.Entry().Key, k.Change, k.Differences)
		}
		got = append(got, fmt.Sprintf("%s %v %s %d", k.Entry().Kind, k.Entry().Key, k.Entry().Verdict, k.A.Count))
	}
	want := []string{
		"compile [{compile.key k1}] changed 1", "compile [{compile.key k2}] changed 1",
		"lookup [{cache.key k1}] missed 1", "lookup [{cache.key k1}] hit 3",
		"lookup [{cache.key k2}] missed 1", "lookup [{cache.key k2}] hit 3",
		"marks [] missed 2", "marks [] hit 6",
	}
	if !slices.Equal(got, want) {
		t.Errorf("keys:\n%q\nwant\n%q", got, want)
	}
	if !slices.Equal(c.LeftOut, []string{"network.peer.port", "server.port"}) {
		t.Errorf("left out %q, want the peer's port and the server's", c.LeftOut)
	}
	// Asked to, it compares them: each run's last request differs.
	all := read(explain.Match{Connections: true})
	changed := 0
	for _, k := range all.Keys {
		if k.Change == explain.Changed {
			changed++
			for _, d := range k.Differences {
				if d.Key != "network.peer.port" && d.Key != "server.port" {
					t.Errorf("difference %s", d.Key)
				}
			}
		}
	}
	if changed == 0 || len(all.LeftOut) != 0 {
		t.Errorf("with Connections: %d keys changed, left out %q; want the ports compared", changed, all.LeftOut)
	}
}

// server.port names the listener on a server's span, and the server
// called on a client's: only the first is left out.
func TestServerPortOfAClientIsCompared(t *testing.T) {
	store := sessions.NewMemStore()
	var ids [2]sessions.SessionID
	for i := range ids {
		port := fmt.Sprint(9000 + i)
		ids[i] = recordAt(testsupport.NoClose{Store: store}, epoch.Add(time.Duration(i)*time.Hour), []span{
			{kind: "fetch", name: "GET", wall: 1, id: 1, spanKind: "client", attrs: sessions.Attrs{str("server.port", port), str("client.port", port)}},
		})
	}
	r := sessions.NewRecords(store.Reopen())
	var sides [2]*explain.Side
	for i, id := range ids {
		side, err := explain.Match{}.Read(r, nil, sessions.InSession(id))
		if err != nil {
			t.Fatal(err)
		}
		sides[i] = side
	}
	c := explain.Diff(sides[0], sides[1])
	if len(c.Keys) != 1 || c.Keys[0].Change != explain.Changed || len(c.Keys[0].Differences) != 1 ||
		c.Keys[0].Differences[0].Key != "server.port" || !slices.Equal(c.LeftOut, []string{"client.port"}) {
		t.Errorf("a client's call to another port: %+v, left out %q; want server.port a difference, client.port left out", c.Keys, c.LeftOut)
	}
}

// A tree holds each name once while names are few and short; past that
// it holds none of a record's name, which Record reads again, and groups
// roots by the names it does not hold as by those it does.
func TestNamesNotHeld(t *testing.T) {
	long := strings.Repeat("n", 2<<10)
	var spans []span
	for i := range 6 {
		spans = append(spans, span{kind: "request", name: long + fmt.Sprint(i%2), at: time.Duration(i), wall: time.Duration(i + 1), id: uint64(i + 1), trace: uint64(i + 1)})
	}
	spans = append(spans, span{kind: "request", name: "short", at: 9, wall: 1, id: 99, trace: 99})
	store := sessions.NewMemStore()
	id := record(store, spans)
	r := sessions.NewRecords(store.Reopen())
	tree, err := explain.Tree(r, id)
	if err != nil {
		t.Fatal(err)
	}
	n := tree.BySeq(3)
	if name, ok := tree.Name(n); ok || name != "" {
		t.Errorf("a name of 2 KiB held: %d bytes", len(name))
	}
	kr, err := tree.Record(r, n)
	if err != nil || kr.Record.Name != long+"1" || kr.Kind != "request" || kr.Stamp.Seq != 3 {
		t.Errorf("Record: %s %d %.10q..., %v", kr.Kind, kr.Stamp.Seq, kr.Record.Name, err)
	}
	var groups []string
	for _, g := range tree.RootGroups() {
		groups = append(groups, fmt.Sprintf("%q %v %d slowest %d", g.Name, g.NameHeld, g.Count, g.Slowest))
	}
	want := []string{`"" false 3 slowest 5`, `"" false 3 slowest 4`, `"short" true 1 slowest 6`}
	if !slices.Equal(groups, want) {
		t.Errorf("groups %q, want %q", groups, want)
	}
	if tree.GroupKey(tree.BySeq(1)) != tree.GroupKey(tree.BySeq(5)) || tree.GroupKey(tree.BySeq(1)) == tree.GroupKey(tree.BySeq(2)) {
		t.Error("GroupKey does not tell the two long names apart, or tells one from itself")
	}
}

// Past 65,536 names, a tree holds no more.
func TestManyNames(t *testing.T) {
	var b explain.TreeBuilder
	const n = 70_000
	for i := range n {
		if err := b.Add(sessions.KindRecord{Kind: "k", Stamped: sessions.Stamped[sessions.Record]{
			Stamp: sessions.Stamp{Session: 1, Seq: uint64(i)}, Record: sessions.Record{Name: fmt.Sprint("name ", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	tree := b.Tree()
	held := 0
	for nd := range tree.Nodes() {
		if name, ok := tree.Name(nd); ok {
			if name != fmt.Sprint("name ", nd.Seq) {
				t.Fatalf("seq %d: name %q", nd.Seq, name)
			}
			held++
		}
	}
	if held != 1<<16 {
		t.Errorf("%d names held, want %d", held, 1<<16)
	}
	if g := tree.RootGroups(); len(g) != n {
		t.Errorf("%d groups of %d roots of names of their own", len(g), n)
	}
}

// A lookup that found its key is a hit; one that compiled it inside is a
// miss, and so is the request around it: work, though neither changed
// anything itself.
func ExampleNode_Verdict() {
	r, ids := serverStore(1, []string{"k1"}, 1) // a miss, then a hit
	tree, err := explain.Tree(r, ids[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	for n := range tree.Walk() {
		name, _ := tree.Name(n)
		fmt.Printf("%s%s: %s\n", strings.Repeat("  ", int(n.Depth)), name, n.Verdict())
		if c := tree.ChangeInside(n); c != nil && n.Depth == 1 {
			inside, _ := tree.Name(c)
			fmt.Printf("    (%s inside changed)\n", inside)
		}
	}
	// Output:
	// GET /lookup: missed
	//   lookup: missed
	//     (compile inside changed)
	//     compile: changed
	// GET /lookup: hit
	//   lookup: hit
}
