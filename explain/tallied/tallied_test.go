package tallied_test

import (
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

func key(k string) sessions.Attrs {
	return sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue(k)}, {Key: "shard.key", Value: sessions.StringValue("s1")}}
}

// hits returns an entry of n hits of key k, each taking d.
func hits(k string, n int, d time.Duration) tallies.Entry {
	e := tallies.Entry{Kind: "cache", Name: "get", Key: key(k)}
	for range n {
		e.Add(d, "hit")
	}
	return e
}

// store writes a row per id and the tallies, and returns the store.
func store(t *testing.T, ids []sessions.SessionID, tallies ...tallies.Tally) sessions.Store {
	t.Helper()
	st := sessions.NewMemStore()
	var entries []sessions.Entry
	for _, id := range ids {
		row, err := sessions.Session{ID: id, OS: "linux", Arch: "amd64"}.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, sessions.Entry{Key: keys.Session(uint64(id)), Value: row})
	}
	for _, tl := range tallies {
		v, err := tl.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, sessions.Entry{Key: keys.Tally(uint64(tl.Session), tl.Part), Value: v})
	}
	if err := st.Write(entries); err != nil {
		t.Fatal(err)
	}
	return st
}

// Read sums the tallies of the sessions read, across stores read as one,
// keyed as a view matches records, and counts those without one.
func TestReadSumsSessionsAndStores(t *testing.T) {
	a := store(t, []sessions.SessionID{10, 20},
		tallies.Tally{Session: 20, Part: 1, Entries: []tallies.Entry{hits("k3", 12, 2*time.Microsecond)}})
	b := store(t, []sessions.SessionID{30},
		tallies.Tally{Session: 30, Part: 1, Entries: []tallies.Entry{hits("k3", 3, 4*time.Microsecond)}, Over: 2},
		tallies.Tally{Session: 30, Part: 2, Entries: []tallies.Entry{hits("k1", 1, time.Microsecond)}})
	r := sessions.NewRecords(sessions.Union([]sessions.Store{a, b}, nil))
	sum, err := tallied.Read(r, explain.Match{}.KeyOf, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sessions != 3 || sum.Untallied != 1 || sum.Over != 2 || !sum.Tallied() {
		t.Errorf("sum of %d sessions, %d untallied, over %d", sum.Sessions, sum.Untallied, sum.Over)
	}
	k3 := sum.Of("cache", "get", key("k3"))
	if k3.Count != 15 || k3.Wall != 36*time.Microsecond || k3.Min != 2*time.Microsecond || k3.Outcomes["hit"] != 15 {
		t.Errorf("k3: %+v", k3)
	}
	if c := sum.Kind("cache"); c.Count != 16 {
		t.Errorf("kind cache: %d tallied, want 16", c.Count)
	}
	if _, ok := sum.Session(10); ok {
		t.Error("session 10 has a tally")
	}
	if tl, ok := sum.Session(30); !ok || tl.Count() != 4 {
		t.Errorf("session 30's tally: %v %+v", ok, tl)
	}
	// Matched by cache.key alone, the entries of k3 fall under it.
	sum, err = tallied.Read(r, explain.Match{Keys: []string{"cache.key"}}.KeyOf, []string{"cache"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := sum.Of("cache", "get", key("k3")[:1]).Count; n != 15 {
		t.Errorf("k3 keyed by cache.key: %d tallied, want 15", n)
	}
	// A kind left out is not summed; a nil sum is a sum of none.
	sum, _ = tallied.Read(r, nil, []string{"compile"}, false)
	var none *tallied.Sum
	if sum.Kind("cache").Count != 0 || none.Of("cache", "get", nil).Count != 0 || none.Tallied() {
		t.Error("a kind left out, or a nil sum, counts")
	}
}
