package explain_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// twoBuilds records two builds in one store: the second tunes matmul to
// another winner, more slowly, and compiles conv where the first compiled
// softmax.
func twoBuilds() (*sessions.Records, [2]sessions.SessionID) {
	ms := time.Millisecond
	store := sessions.NewMemStore()
	var ids [2]sessions.SessionID
	for i, b := range []struct {
		winner  string
		tune    time.Duration
		compile string
	}{{"tiled", 20 * ms, "softmax"}, {"simd", 30 * ms, "conv"}} {
		ids[i] = recordAt(testsupport.NoClose{Store: store}, epoch.Add(time.Duration(i)*time.Hour), []span{
			{kind: "marks", name: "build", at: 0, wall: b.tune + 10*ms, id: 1},
			{kind: "autotune", name: "tune matmul", at: 0, wall: b.tune, id: 2, parent: 1,
				attrs: sessions.Attrs{str("autotune.key", "matmul"), str("winner", b.winner)}},
			{kind: "compile", name: "compile " + b.compile, at: b.tune, wall: 10 * ms, id: 3, parent: 1},
		})
	}
	return sessions.NewRecords(store.Reopen()), ids
}

// Diff compares two sessions (or stores): what each recorded of a key,
// and how long each took.
func ExampleDiff() {
	r, ids := twoBuilds()
	var sides [2]*explain.Side
	for i, id := range ids {
		side, err := explain.Match{}.Read(r, nil, sessions.InSession(id))
		if err != nil {
			fmt.Println(err)
			return
		}
		sides[i] = side
	}
	c := explain.Diff(sides[0], sides[1])
	for _, k := range c.Keys {
		e := k.Entry()
		fmt.Printf("%s %s: %s", e.Kind, e.Name, k.Change)
		for _, d := range k.Differences {
			fmt.Printf(" (%s: %v → %v)", d.Key, side(d.Before), side(d.After))
		}
		fmt.Println()
	}
	fmt.Printf("duration: %v → %v\n", c.Duration.A, c.Duration.B)
	for _, s := range c.Slower(20, time.Millisecond) {
		fmt.Printf("slower: %s (%s) %v → %v\n", s.Key.A.Name, s.Key.A.Effect, s.A, s.B)
	}
	// Output:
	// autotune tune matmul: changed (winner: tiled → simd)
	// compile compile conv: only_in_b
	// compile compile softmax: only_in_a
	// marks build: same
	// duration: 30ms → 40ms
	// slower: tune matmul (changed) 20ms → 30ms
	// slower: build (changed) 30ms → 40ms
}

func TestSlowerThreshold(t *testing.T) {
	r, ids := twoBuilds()
	a, _ := explain.Match{}.Read(r, nil, sessions.InSession(ids[0]))
	b, _ := explain.Match{}.Read(r, nil, sessions.InSession(ids[1]))
	// The build grew by a third; tune matmul by exactly a half, which is
	// not more than 50%. Each grew by 10ms, which is not more than 10ms.
	for _, c := range []struct {
		pct      float64
		minDelta time.Duration
		want     int
	}{{20, 0, 2}, {49, 0, 1}, {50, 0, 0}, {20, 9 * time.Millisecond, 2}, {20, 10 * time.Millisecond, 0}} {
		if got := len(explain.Diff(a, b).Slower(c.pct, c.minDelta)); got != c.want {
			t.Errorf("Slower(%v, %v): %d, want %d", c.pct, c.minDelta, got, c.want)
		}
	}
	// The other way round, nothing is slower.
	if got := explain.Diff(b, a).Slower(0, 0); len(got) != 0 {
		t.Errorf("faster: %d slowdowns, want none", len(got))
	}
}

// A server's key, done once and then found done: each side's work is
// compared with its work and its hits with its hits, by their medians. The
// work grew 2x and is slower; the hits, noisy microseconds, never are,
// and an ignored pattern keeps the port out of the differences.
func TestDiffLikeWithLike(t *testing.T) {
	store := sessions.NewMemStore()
	var ids [2]sessions.SessionID
	us, ms := time.Microsecond, time.Millisecond
	for i, run := range []struct {
		compile time.Duration
		hits    []time.Duration
		port    int64
	}{{20 * ms, []time.Duration{3 * us, 5 * us, 4 * us}, 40001}, {40 * ms, []time.Duration{9 * us, 700 * us, 8 * us, 6 * us}, 40517}} {
		spans := []span{{kind: "lookup", name: "lookup", wall: run.compile, id: 1,
			attrs: sessions.Attrs{str("lookup.key", "k1"), sessions.Attr{Key: "server.port", Value: sessions.Int64Value(run.port)}}}}
		for j, h := range run.hits {
			spans = append(spans, span{kind: "lookup", name: "lookup", at: run.compile + time.Duration(j)*ms, wall: h, id: uint64(2 + j), observed: true,
				attrs: sessions.Attrs{str("lookup.key", "k1"), sessions.Attr{Key: "server.port", Value: sessions.Int64Value(run.port)}}})
		}
		ids[i] = recordAt(testsupport.NoClose{Store: store}, epoch.Add(time.Duration(i)*time.Hour), spans)
	}
	r := sessions.NewRecords(store.Reopen())
	m := explain.Match{Ignore: []string{"net.*", "server.*"}}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	var sides [2]*explain.Side
	for i, id := range ids {
		var err error
		if sides[i], err = m.Read(r, nil, sessions.InSession(id)); err != nil {
			t.Fatal(err)
		}
	}
	c := explain.Diff(sides[0], sides[1])
	var got []string
	for _, k := range c.Keys {
		got = append(got, fmt.Sprintf("%s %s %d/%d %v/%v %v/%v", k.Change, k.A.Effect, k.A.Count, k.B.Count, k.A.Median, k.B.Median, k.A.Total, k.B.Total))
	}
	want := []string{
		"same changed 1/1 20ms/40ms 20ms/40ms",
		"same observed 3/4 4µs/8.5µs 12µs/723µs",
	}
	if !slices.Equal(got, want) {
		t.Errorf("keys:\n%q\nwant\n%q", got, want)
	}
	slower := c.Slower(50, time.Millisecond)
	if len(slower) != 1 || slower[0].Key.A.Effect != "changed" || slower[0].B != 40*ms {
		t.Errorf("slower: %+v, want the work alone", slower)
	}
	if len(c.Slower(50, 0)) != 2 {
		t.Errorf("with no least delta, the hits' 4µs → 8.5µs is slower too")
	}
	// Without the pattern, the port is a difference.
	a, _ := explain.Match{}.Read(r, nil, sessions.InSession(ids[0]))
	b, _ := explain.Match{}.Read(r, nil, sessions.InSession(ids[1]))
	if k := explain.Diff(a, b).Keys[0]; k.Change != explain.Changed || k.Differences[0].Key != "server.port" {
		t.Errorf("not ignored: %+v, want server.port to differ", k)
	}
	if err := (explain.Match{Ignore: []string{"net.["}}).Check(); err == nil {
		t.Error("Check accepted net.[")
	}
}
