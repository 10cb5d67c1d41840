package collector

import "testing"

// TestNotedFindsBySeq checks a session's notes against a map of what was
// noted and not yet dropped: found by seq, dropped only for their own
// request, the front given up as it empties, and a note past
// maxNotedGap giving up older ones rather than holding room for the gap.
func TestNotedFindsBySeq(t *testing.T) {
	c1, c2 := &converted{}, &converted{}
	var n noted
	want := map[uint64]asIs{}
	check := func(what string) {
		t.Helper()
		for seq, a := range want {
			got, ok := n.get(seq)
			if !ok || got != a {
				t.Fatalf("%s: seq %d: got %+v, %v; want %+v", what, seq, got, ok, a)
			}
		}
		found := 0
		for _, a := range n.buf[n.lo:] {
			if a.c != nil {
				found++
			}
		}
		if found != len(want) {
			t.Fatalf("%s: %d notes held, want %d", what, found, len(want))
		}
		if n.len() > 0 && n.buf[n.lo].c == nil {
			t.Fatalf("%s: an empty note at the front", what)
		}
	}
	for seq := uint64(10); seq < 40; seq += 3 {
		c := c1
		if seq%2 == 0 {
			c = c2
		}
		a := asIs{c: c, i: int(seq), kind: "cache"}
		n.put(seq, a)
		want[seq] = a
	}
	check("noted")
	if _, ok := n.get(11); ok {
		t.Fatal("seq 11 was never noted")
	}
	n.drop(10, c1) // another request's: stays
	check("dropped for another request")
	n.drop(10, c2)
	delete(want, 10)
	check("dropped")
	n.drop(13, nil)
	delete(want, 13)
	check("dropped by seq")
	// A note far past the oldest gives up the older ones.
	far := n.base + maxNotedGap + 5
	n.put(far, asIs{c: c1, kind: "far"})
	for seq := range want {
		if far-seq > maxNotedGap/2 {
			delete(want, seq)
		}
	}
	want[far] = asIs{c: c1, kind: "far"}
	check("past the gap")
	if n.len() > maxNotedGap {
		t.Fatalf("%d notes held for a gap of %d", n.len(), maxNotedGap)
	}
	for seq := range want {
		n.drop(seq, nil)
		delete(want, seq)
	}
	check("all dropped")
	if n.len() != 0 || len(n.buf) != 0 {
		t.Fatalf("%d notes left", n.len())
	}
}
