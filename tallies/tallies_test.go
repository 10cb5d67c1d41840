package tallies_test

import (
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

func TestTallyPartsAreSummed(t *testing.T) {
	st := sessions.NewMemStore()
	id := sessions.SessionID(1735787045006000000)
	var a, b tallies.Entry
	a.Kind, a.Name, a.Key = "cache", "lookup", sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue("k3")}}
	b = a
	a.Add(2*time.Millisecond, "hit")
	a.Add(3*time.Millisecond, "hit")
	b.Add(time.Second, "hit")
	p1 := tallies.Tally{Session: id, Part: 1, Entries: []tallies.Entry{a}}
	p2 := tallies.Tally{Session: id, Part: 2, Entries: []tallies.Entry{b}, Over: 1}
	var entries []sessions.Entry
	for _, p := range []tallies.Tally{p1, p2} {
		v, err := p.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, sessions.Entry{Key: keys.Tally(uint64(id), p.Part), Value: v})
	}
	// A session row beside, and another session's tally: neither is read as this tally.
	row, _ := sessions.Session{ID: id, OS: "linux", Arch: "amd64"}.MarshalCBOR()
	entries = append(entries, sessions.Entry{Key: keys.Session(uint64(id)), Value: row})
	other, _ := tallies.Tally{Session: id + 1, Part: 1, Entries: []tallies.Entry{a}}.MarshalCBOR()
	entries = append(entries, sessions.Entry{Key: keys.Tally(uint64(id)+1, 1), Value: other})
	if err := st.Write(entries); err != nil {
		t.Fatal(err)
	}
	r := sessions.NewRecords(st)
	got, ok, err := tallies.Read(r, id)
	if err != nil || !ok {
		t.Fatalf("Tally = %v, %v", ok, err)
	}
	if len(got.Entries) != 1 || got.Over != 1 || got.Part != 0 {
		t.Fatalf("tally %+v", got)
	}
	e := got.Entries[0]
	if e.Count != 3 || e.Wall != time.Second+5*time.Millisecond || e.Min != 2*time.Millisecond || e.Max != time.Second || e.Outcomes["hit"] != 3 {
		t.Fatalf("entry %+v", e)
	}
	if q := e.Quantile(0.5); q < 2*time.Millisecond || q > 4*time.Millisecond {
		t.Fatalf("median %v", q)
	}
	// The sessions and the newest are read as before.
	n := 0
	for s, err := range r.Sessions() {
		if err != nil || s.ID != id {
			t.Fatalf("session %v %v", s.ID, err)
		}
		n++
	}
	if n != 1 || r.Skipped() != 0 {
		t.Fatalf("%d sessions, %d skipped", n, r.Skipped())
	}
	if _, ok, _ := tallies.Read(r, id+2); ok {
		t.Fatal("a tally of a session with none")
	}
}

func TestTallyBuckets(t *testing.T) {
	for _, d := range []time.Duration{0, 1023, 1024, 2047, 2048, time.Millisecond, time.Hour, 1 << 62} {
		i := tallies.Bucket(d)
		lo, hi := tallies.BucketBounds(i)
		if d < lo || hi != 0 && d >= hi || i < 0 || i >= tallies.Buckets {
			t.Errorf("%v in bucket %d [%v, %v)", d, i, lo, hi)
		}
	}
}

// A session's parts in two stores read through a Union are summed as
// they are in one; the same part in both is read once.
func TestTallyOverAUnion(t *testing.T) {
	id := sessions.SessionID(1735787045006000000)
	part := func(p uint64, n int) sessions.Entry {
		e := tallies.Entry{Kind: "cache", Name: "lookup"}
		for range n {
			e.Add(time.Millisecond, "hit")
		}
		v, err := tallies.Tally{Session: id, Part: p, Entries: []tallies.Entry{e}}.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		return sessions.Entry{Key: keys.Tally(uint64(id), p), Value: v}
	}
	a, b := sessions.NewMemStore(), sessions.NewMemStore()
	if err := a.Write([]sessions.Entry{part(1, 3), part(2, 4)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Write([]sessions.Entry{part(2, 4), part(3, 5)}); err != nil {
		t.Fatal(err)
	}
	u := sessions.Union([]sessions.Store{a, b}, func(int, error) {})
	tl, ok, err := tallies.Read(sessions.NewRecords(u), id)
	if err != nil || !ok || tl.Count() != 12 || tl.Entries[0].Outcomes["hit"] != 12 {
		t.Fatalf("Tally over the union = %+v, %v, %v; want 3 + 4 + 5", tl, ok, err)
	}
}
