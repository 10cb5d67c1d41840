package recorder

import "testing"

// A drawn id another session of the process took is drawn again, however
// often the draw repeats, and no id is 0.
func TestClaimDrawsAgainWhenTaken(t *testing.T) {
	draws := []uint64{5, 5, 5, 7}
	ids := IDs{draw: func() uint64 { d := draws[0]; draws = draws[1:]; return d }}
	const ns = 1 << 40
	if a, b := ids.claim(ns, false), ids.claim(ns, false); a != ns-(1<<IDRandomBits)+5 || b != ns-(1<<IDRandomBits)+7 {
		t.Fatalf("claims = %d, %d; want %d then %d", a, b, ns-(1<<IDRandomBits)+5, ns-(1<<IDRandomBits)+7)
	}
	zero := IDs{draw: func() uint64 { return 0 }}
	if id := zero.claim(3, false); id == 0 {
		t.Fatal("claim gave id 0")
	}
}

// Sessions of one process that start later get larger ids, even when
// their starts are nanoseconds apart, well within the random bits.
func TestClaimOrdersLaterStarts(t *testing.T) {
	var ids IDs
	const ns = 1 << 50
	last := uint64(0)
	for i := range uint64(10000) {
		id := ids.claim(ns+i, false)
		if id <= last {
			t.Fatalf("start %d: id %d not above the previous %d", ns+i, id, last)
		}
		last = id
	}
}

// Exact ids are the start itself, or the next free nanosecond.
func TestClaimExact(t *testing.T) {
	var ids IDs
	if a, b, c := ids.claim(1000, true), ids.claim(1000, true), ids.claim(1001, true); a != 1000 || b != 1001 || c != 1002 {
		t.Fatalf("exact claims = %d, %d, %d; want 1000, 1001, 1002", a, b, c)
	}
}
