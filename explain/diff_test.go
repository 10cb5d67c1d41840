package explain_test

import (
	"fmt"
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
	for _, s := range c.Slower(20) {
		if s.Key != nil {
			fmt.Printf("slower: %s %v → %v\n", s.Key.A.Name, s.A, s.B)
		} else {
			fmt.Printf("slower: total %q %v → %v\n", s.Total.Kind, s.A, s.B)
		}
	}
	// Output:
	// autotune tune matmul: changed (winner: tiled → simd)
	// compile compile conv: only_in_b
	// compile compile softmax: only_in_a
	// marks build: same
	// duration: 30ms → 40ms
	// slower: total "" 30ms → 40ms
	// slower: total "autotune" 20ms → 30ms
	// slower: total "marks" 30ms → 40ms
	// slower: tune matmul 20ms → 30ms
	// slower: build 30ms → 40ms
}

func TestSlowerThreshold(t *testing.T) {
	r, ids := twoBuilds()
	a, _ := explain.Match{}.Read(r, nil, sessions.InSession(ids[0]))
	b, _ := explain.Match{}.Read(r, nil, sessions.InSession(ids[1]))
	// The build and its duration grew by a third; tune matmul and its
	// kind by exactly a half, which is not more than 50%.
	for pct, want := range map[float64]int{20: 5, 49: 2, 50: 0} {
		if got := len(explain.Diff(a, b).Slower(pct)); got != want {
			t.Errorf("Slower(%v): %d, want %d", pct, got, want)
		}
	}
	// The other way round, nothing is slower.
	if got := explain.Diff(b, a).Slower(0); len(got) != 0 {
		t.Errorf("faster: %d slowdowns, want none", len(got))
	}
}
