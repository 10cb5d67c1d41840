package summary_test

import (
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

func cacheKey(k string) sessions.Attrs {
	return sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue(k)}}
}

// hits returns an entry of n hits of key k, each taking d.
func hits(k string, n int, d time.Duration) tallies.Entry {
	e := tallies.Entry{Kind: "cache", Name: "get", Key: cacheKey(k)}
	for range n {
		e.Add(d, "hit")
	}
	return e
}

// Hits tells, per key, the hits and misses of each side, and a side
// that never looked a key up from one that only hit it.
func TestHitsOfADiff(t *testing.T) {
	a, b := tallied.New(nil), tallied.New(nil)
	a.Add(tallies.Tally{Session: 1, Entries: []tallies.Entry{hits("k1", 4, time.Microsecond)}}, true)
	b.Add(tallies.Tally{Session: 2, Entries: []tallies.Entry{hits("k3", 12, 2*time.Microsecond)}}, true)
	c := explain.Comparison{Keys: []explain.KeyDiff{{Change: explain.OnlyInA,
		A: &explain.Entry{Kind: "cache", Name: "get", Key: cacheKey("k3"), Verdict: explain.Done, Count: 1, Median: time.Millisecond, Total: time.Millisecond}}}}
	rows := summary.Hits(c, a, b)
	if len(rows) != 2 || rows[0].Key[0].Value.AsString() != "k1" || rows[1].Key[0].Value.AsString() != "k3" {
		t.Fatalf("rows %+v", rows)
	}
	k1, k3 := rows[0], rows[1]
	if !k1.A.LookedUp() || k1.B.LookedUp() || k1.A.Hits != 4 || k1.A.Share() != 1 {
		t.Errorf("k1: %+v", k1)
	}
	if k3.A.Misses != 1 || k3.A.Hits != 0 || !k3.A.Recorded || k3.B.Hits != 12 || k3.B.Tallied != 12 || k3.B.Recorded ||
		k3.B.Hit.Quantile(0.5) != 2*time.Microsecond || k3.B.Lookups() != 12 {
		t.Errorf("k3: %+v", k3)
	}
}
