package explain_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// Two sessions tune keys, two at a time, their candidates interleaved;
// the second tunes one key again. Rework adds up, from the spans
// themselves, what the tunes spent in candidates and what was redone —
// and what raced: a candidate that starts while the other tune's
// candidate of the same name (the same work, as far as names tell) still
// runs.
func TestRework(t *testing.T) {
	store := &sliceStore{}
	type tune struct {
		key        string
		candidates []time.Duration
	}
	sessionsOf := [][]tune{
		{{"matmul/128", []time.Duration{3, 5, 7}}, {"conv/3x3", []time.Duration{2, 4}}},
		{{"matmul/128", []time.Duration{6}}, {"softmax", []time.Duration{1, 1, 1, 1}}},
	}
	var ids []sessions.SessionID
	for s, tunes := range sessionsOf {
		var spans []span
		for i, tu := range tunes {
			spans = append(spans, span{kind: "autotune", name: tu.key, at: time.Duration(i), wall: 100, id: uint64(100 + i)})
		}
		// Candidates of both tunes, interleaved: one of each in turn.
		for c := range 4 {
			for i, tu := range tunes {
				if c < len(tu.candidates) {
					spans = append(spans, span{kind: "candidate", name: fmt.Sprint("candidate ", c), at: time.Duration(10 + 10*c + i),
						wall: tu.candidates[c], id: uint64(1000 + 10*i + c), parent: uint64(100 + i)})
				}
			}
		}
		spans = append(spans, span{kind: "marks", name: "save", at: 200, wall: 1, id: 7})
		ids = append(ids, recordAt(store, epoch.Add(time.Duration(s)*time.Hour), spans))
	}

	var w explain.Rework
	r := sessions.NewRecords(store)
	if err := addSessions(&w, r, ids...); err != nil {
		t.Fatal(err)
	}

	var want explain.ChildWork
	want.Parent, want.Child = "autotune", "candidate"
	keys := map[[2]string]*explain.KeyWork{}
	// running are the ends of each key's records in the session being
	// counted: one that starts before an earlier one ends raced it.
	var running map[[2]string][]time.Duration
	count := func(kind, name string, at, wall time.Duration, seen map[[2]string]bool) {
		k := keys[[2]string{kind, name}]
		if k == nil {
			k = &explain.KeyWork{Kind: kind, Name: name}
			keys[[2]string{kind, name}] = k
		}
		raced := slices.ContainsFunc(running[[2]string{kind, name}], func(end time.Duration) bool { return end > at })
		running[[2]string{kind, name}] = append(running[[2]string{kind, name}], at+wall)
		switch {
		case raced:
			k.Raced++
			k.RacedWall += wall
		case k.Records > 0: // every test record changed something
			k.Redos++
			k.Redone += wall
		}
		k.Records++
		k.Misses++ // every test record changed something: none was found done
		k.Wall += wall
		if !seen[[2]string{kind, name}] {
			seen[[2]string{kind, name}] = true
			k.Sessions++
		}
	}
	for _, tunes := range sessionsOf {
		seen := map[[2]string]bool{}
		running = map[[2]string][]time.Duration{}
		for i, tu := range tunes {
			want.Parents++
			count("autotune", tu.key, time.Duration(i), 100, seen)
		}
		// In the order they were recorded: one candidate of each in turn.
		for c := range 4 {
			for i, tu := range tunes {
				if c < len(tu.candidates) {
					want.Children++
					want.Wall += tu.candidates[c]
					count("candidate", fmt.Sprint("candidate ", c), time.Duration(10+10*c+i), tu.candidates[c], seen)
				}
			}
		}
		count("marks", "save", 200, 1, seen)
	}
	want.UnchangedKnown = true // every test record stores its effect: changed
	if got := w.Children(); !slices.Equal(got, []explain.ChildWork{want}) {
		t.Errorf("children: %+v, want %+v", got, want)
	}
	var redone []explain.KeyWork
	for _, k := range keys {
		if k.Records > 1 {
			redone = append(redone, *k)
		}
	}
	got := w.Redone()
	if len(got) != len(redone) {
		t.Fatalf("redone: %+v, want %+v", got, redone)
	}
	for i, k := range got {
		if !slices.ContainsFunc(redone, func(w explain.KeyWork) bool { return reflect.DeepEqual(w, k) }) {
			t.Errorf("redone: %+v, not in %+v", k, redone)
		}
		if i > 0 && (got[i-1].Redone < k.Redone || got[i-1].Redone == k.Redone && got[i-1].Wall < k.Wall) {
			t.Errorf("redone out of order: %+v", got)
		}
	}
	if k := keys[[2]string{"autotune", "matmul/128"}]; k.Records != 2 || k.Sessions != 2 {
		t.Errorf("matmul/128 tuned %d times in %d sessions, want twice in 2", k.Records, k.Sessions)
	}

	var empty explain.Rework
	if len(empty.Children()) != 0 || len(empty.Redone()) != 0 {
		t.Error("an empty Rework reports work")
	}
}

// TestReworkUnchanged splits the time in children by their effect, where
// a Body knows it: here, an attribute says it.
func TestReworkUnchanged(t *testing.T) {
	store := sessions.NewMemStore()
	id := record(store, []span{
		{kind: "autotune", name: "matmul", wall: 30, id: 1},
		{kind: "candidate", name: "tiled", at: 0, wall: 10, id: 2, parent: 1, attrs: sessions.Attrs{str("effect", "observed")}},
		{kind: "candidate", name: "simd", at: 10, wall: 15, id: 3, parent: 1, attrs: sessions.Attrs{str("effect", "changed")}},
		{kind: "candidate", name: "split-k", at: 25, wall: 5, id: 4, parent: 1, attrs: sessions.Attrs{str("effect", "observed")}},
	})
	r := sessions.NewRecords(store.Reopen())
	known := explain.Rework{Body: effectAttr{}}
	if err := addSessions(&known, r, id); err != nil {
		t.Fatal(err)
	}
	if c := known.Children()[0]; !c.UnchangedKnown || c.Unchanged != 15 || c.UnchangedChildren != 2 || c.Wall != 30 {
		t.Errorf("with effects: %+v; want 15ns in 2 children that changed nothing, of 30ns", c)
	}
	// StoredBody reads the effect the record stores: the test sessions
	// record every span as changed, so no child changed nothing.
	var stored explain.Rework
	if err := addSessions(&stored, r, id); err != nil {
		t.Fatal(err)
	}
	if c := stored.Children()[0]; !c.UnchangedKnown || c.Unchanged != 0 {
		t.Errorf("stored effects: %+v; want known, nothing unchanged", c)
	}
}

// A server's keys: each compiled once and then found in the cache, over
// two sessions (two runs of the server). Hits are their own count, never
// redone; the second run's compiles of keys the first compiled are, and
// so is a key compiled twice in one session. Keys tell one compile from
// another where names do not.
func TestReworkHits(t *testing.T) {
	store := sessions.NewMemStore()
	ms := time.Millisecond
	lookup := func(key string, at, wall time.Duration, id uint64, hit bool) span {
		return span{kind: "lookup", name: "lookup", at: at, wall: wall, id: id, observed: hit, attrs: sessions.Attrs{str("lookup.key", key)}}
	}
	var ids []sessions.SessionID
	for run, spans := range [][]span{
		{lookup("a", 0, 20*ms, 1, false), lookup("a", 20*ms, ms, 2, true), lookup("b", 21*ms, 30*ms, 3, false), lookup("a", 51*ms, ms, 4, true)},
		{lookup("a", 0, 40*ms, 1, false), lookup("a", 40*ms, 2*ms, 2, true), lookup("c", 42*ms, 10*ms, 3, false), lookup("c", 52*ms, 10*ms, 4, false)},
	} {
		ids = append(ids, recordAt(testsupport.NoClose{Store: store}, epoch.Add(time.Duration(run)*time.Hour), spans))
	}
	var w explain.Rework
	r := sessions.NewRecords(store.Reopen())
	if err := addSessions(&w, r, ids...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range w.Redone() {
		got = append(got, fmt.Sprintf("%s %d records in %d sessions, %d redone in %v, %d hits in %v",
			k.Key, k.Records, k.Sessions, k.Redos, k.Redone, k.Hits, k.HitWall))
	}
	want := []string{
		"[{lookup.key a}] 5 records in 2 sessions, 1 redone in 40ms, 3 hits in 4ms",
		"[{lookup.key c}] 2 records in 1 sessions, 1 redone in 10ms, 0 hits in 0s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("redone:\n%q\nwant\n%q", got, want)
	}
}

// Redone tells, per key, work done again from work found done: a server
// that compiled k1 and then answered it from its cache twice, restarted,
// and compiled it again.
func ExampleRework_Redone() {
	store := sessions.NewMemStore()
	lookup := func(at, wall time.Duration, hit bool) span {
		return span{kind: "compile", name: "compile", at: at, wall: wall, id: uint64(at + 1), observed: hit,
			attrs: sessions.Attrs{str("compile.key", "k1")}}
	}
	ms := time.Millisecond
	first := record(testsupport.NoClose{Store: store}, []span{lookup(0, 20*ms, false), lookup(30*ms, ms, true), lookup(40*ms, ms, true)})
	restarted := recordAt(testsupport.NoClose{Store: store}, epoch.Add(time.Hour), []span{lookup(0, 40*ms, false)})
	r := sessions.NewRecords(store.Reopen())
	var w explain.Rework
	if err := addSessions(&w, r, first, restarted); err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range w.Redone() {
		fmt.Printf("%s %v: %d records; redone %d (%v); hits %d (%v)\n", k.Kind, k.Key, k.Records, k.Redos, k.Redone, k.Hits, k.HitWall)
	}
	// Output:
	// compile [{compile.key k1}]: 4 records; redone 1 (40ms); hits 2 (2ms)
}

// A session's tally adds its records let go as hits of their key, in
// Records, Hits and Tallied, the session counted once with its records;
// a rest is counted under its kind alone.
func TestReworkTally(t *testing.T) {
	store := sessions.NewMemStore()
	ms := time.Millisecond
	id := recordAt(testsupport.NoClose{Store: store}, epoch, []span{
		{kind: "lookup", name: "lookup", wall: 20 * ms, id: 1, attrs: sessions.Attrs{str("lookup.key", "a")}}})
	r := sessions.NewRecords(store.Reopen())
	entry := func(key string, n int, rest bool) tallies.Entry {
		e := tallies.Entry{Kind: "lookup", Name: "lookup", Rest: rest}
		if rest {
			e.Name = ""
		} else {
			e.Key = sessions.Attrs{str("lookup.key", key)}
		}
		for range n {
			e.Add(ms, "hit")
		}
		return e
	}
	var w explain.Rework
	w.Begin(sessions.Session{ID: id})
	w.Tally(tallies.Tally{Session: id, Entries: []tallies.Entry{entry("a", 4, false), entry("b", 2, false), entry("", 3, true)}})
	if err := addSessions(&w, r, id); err != nil {
		t.Fatal(err)
	}
	w.Tally(tallies.Tally{Session: id + 1, Entries: []tallies.Entry{entry("a", 1, false)}})
	var got []string
	for _, k := range w.Redone() {
		got = append(got, fmt.Sprintf("%q %v: %d records in %d sessions, %d hits (%d tallied, %v), %d misses",
			k.Name, k.Key, k.Records, k.Sessions, k.Hits, k.Tallied, k.TalliedWall, k.Misses))
	}
	want := []string{
		`"lookup" [{lookup.key a}]: 6 records in 2 sessions, 5 hits (5 tallied, 5ms), 1 misses`,
		`"" []: 3 records in 1 sessions, 3 hits (3 tallied, 3ms), 0 misses`,
		`"lookup" [{lookup.key b}]: 2 records in 1 sessions, 2 hits (2 tallied, 2ms), 0 misses`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("redone:\n%q\nwant\n%q", got, want)
	}
}
