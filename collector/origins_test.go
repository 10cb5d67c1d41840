package collector

import "testing"

// TestNotedFindsBySeq checks a session's notes against a map of what was
// noted and not yet dropped: found by seq, dropped only for their own
// request, the front given up as it empties, and a note past
// maxNotedGap refused rather than giving up older ones (whose records may
// be queued unencoded) or holding room for the gap.
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
		if !n.put(seq, a) {
			t.Fatalf("seq %d refused", seq)
		}
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
	// A note far past the oldest is refused; the older ones stay.
	far := n.base + maxNotedGap + 5
	if n.put(far, asIs{c: c1, kind: "far"}) {
		t.Fatal("a note maxNotedGap past the oldest was taken")
	}
	if n.put(n.base-1, asIs{c: c1, kind: "before"}) {
		t.Fatal("a note before the oldest was taken")
	}
	check("past the gap")
	if n.len() > maxNotedGap {
		t.Fatalf("%d notes held for a gap of %d", n.len(), maxNotedGap)
	}
	near := n.base + maxNotedGap - 1
	if !n.put(near, asIs{c: c2, kind: "near"}) {
		t.Fatal("a note within maxNotedGap of the oldest was refused")
	}
	want[near] = asIs{c: c2, kind: "near"}
	check("within the gap")
	for seq := range want {
		n.drop(seq, nil)
		delete(want, seq)
	}
	check("all dropped")
	if n.len() != 0 || len(n.buf) != 0 {
		t.Fatalf("%d notes left", n.len())
	}
}
