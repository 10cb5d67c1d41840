package sent

import (
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

func tally(from sessions.SessionID, part uint64, n int) tallies.Tally {
	var e tallies.Entry
	e.Kind, e.Name = "cache", "lookup"
	for range n {
		e.Add(time.Microsecond, "hit")
	}
	return tallies.Tally{Session: from, Part: part, Entries: []tallies.Entry{e}}
}

// Of the versions of a part, the one that counts most is written, once,
// under the session it joins and a part drawn from the sender's; an
// older version coming late replaces nothing.
func TestHeldKeepsTheNewest(t *testing.T) {
	var h Held
	const from, id = sessions.SessionID(100), sessions.SessionID(200)
	h.Take(from, tally(from, 1, 3))
	h.Take(from, tally(from, 1, 5))
	h.Take(from, tally(from, 1, 4)) // late
	h.Take(from, tally(from, 2, 1))
	es, err := h.Unwritten(id)
	if err != nil || len(es) != 2 {
		t.Fatalf("%d entries, %v; want the 2 parts", len(es), err)
	}
	counts := map[uint64]int64{}
	for _, e := range es {
		tl, ok, err := tallies.Of(e)
		if !ok || err != nil || tl.Session != id {
			t.Fatalf("entry %x: %+v, %v, %v; want a part of session %d", e.Key, tl, ok, err, id)
		}
		counts[tl.Part] = tl.Count()
	}
	if counts[Part(from, 1)] != 5 || counts[Part(from, 2)] != 1 || Part(from, 1) == 1 || Part(from, 1) == Part(from+1, 1) {
		t.Errorf("parts %v: want part %d counting 5 and part %d counting 1, drawn from sender and part", counts, Part(from, 1), Part(from, 2))
	}
	if es, _ := h.Unwritten(id); len(es) != 0 {
		t.Errorf("%d entries again, want none: written once", len(es))
	}
	h.Take(from, tally(from, 1, 5)) // the same again
	h.Take(from, tally(from, 1, 6))
	if es, _ := h.Unwritten(id); len(es) != 1 {
		t.Errorf("%d entries after a newer version, want 1", len(es))
	}
}
