package keyhistory

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// rec is a record of the test key: its instance, session, start and
// wall, and whether it was a hit.
type rec struct {
	inst        int32
	session     uint64
	at, wall    time.Duration
	hit         bool
	name        string
	wantCause   Cause
	wantPrev    string // the name of the record compared with, "" for none
	wantAtOnce  int
	description string
}

func TestJudge(t *testing.T) {
	const a, b, c = 0, 1, 2
	recs := []rec{
		{a, 1, 0, 10, false, "a1 miss", New, "", 0, "the first in the store"},
		{a, 1, 5, 10, false, "a1 race", Raced, "a1 miss", 2, "a1 miss still runs"},
		{a, 1, 6, 10, false, "a1 race 2", Raced, "a1 race", 3, "both still run"},
		{a, 1, 30, 1, true, "a1 hit", Hit, "a1 race 2", 0, "the work of its instance"},
		{b, 2, 2, 1, false, "b2 miss", NewHere, "a1 race 2", 0, "b never did it"},
		{b, 2, 3, 1, true, "b2 hit", Hit, "b2 miss", 0, "the work of its instance"},
		{b, 2, 8, 1, false, "b2 again", Again, "b2 miss", 0, "b2 miss ended at 3"},
		{c, 3, 0, 1, true, "c3 hit", Hit, "b2 again", 0, "none on its instance: the store's latest work"},
		{c, 3, 1, 1, false, "c3 miss", Again, "c3 hit", 0, "c's cache held it: its hit says so"},
		{c, 3, 5, 10, true, "c3 waits", Hit, "c3 miss", 0, "c's latest work"},
		{c, 3, 7, 1, false, "c3 miss 2", Again, "c3 miss", 0, "c3 waits has not answered yet: c3 miss is the latest before"},
		{a, 4, 0, 1, false, "a4 again", Again, "a1 race 2", 0, "a's own work, not b's or c's"},
		{a, 4, 0, math.MaxInt64, false, "a4 forever", Raced, "a4 again", 2, "a4 again runs at 0"},
		{a, 4, 1 << 62, 1, false, "a4 late", Raced, "a4 forever", 2, "a wall past the clock's end runs to its end"},
	}
	var h History[string]
	for _, r := range recs {
		j := h.Judge(r.inst, r.session, r.at, r.wall, r.hit, r.name)
		prev := ""
		if j.HasPrev {
			prev = j.Prev
		}
		if j.Cause != r.wantCause || prev != r.wantPrev || j.AtOnce != r.wantAtOnce {
			t.Errorf("%s: cause %d, compared with %q, %d at once; want %d, %q, %d (%s)",
				r.name, j.Cause, prev, j.AtOnce, r.wantCause, r.wantPrev, r.wantAtOnce, r.description)
		}
	}
}

// A history keeps a few words of what came before, and of the work
// running at once no more than runs at once.
func TestRunningLetGo(t *testing.T) {
	var h History[struct{}]
	var causes []Cause
	for i := range 1000 {
		j := h.Judge(0, 1, time.Duration(10*i), 5, false, struct{}{})
		causes = append(causes, j.Cause)
		if len(h.running) > 1 {
			t.Fatalf("record %d: %d running, want the one just added", i, len(h.running))
		}
	}
	if causes[0] != New || slices.ContainsFunc(causes[1:], func(c Cause) bool { return c != Again }) {
		t.Errorf("causes %v, want new then again", fmt.Sprint(causes[:3]))
	}
}

// Issue 43's flake: a request that looked the key up first waited on the
// lock of the one computing it, and hit the work that one did; the
// computing one is the first of the key, new, never "done again".
func TestHitThatWaitedIsNotEarlier(t *testing.T) {
	var h History[string]
	if j := h.Judge(0, 1, 0, 10, true, "waits"); j.Cause != Hit || j.HasPrev {
		t.Errorf("the waiting hit: %+v, want a hit with nothing before", j)
	}
	if j := h.Judge(0, 1, 1, 5, false, "computes"); j.Cause != New {
		t.Errorf("the compute that started while the hit waited: cause %d, want New", j.Cause)
	}
	if j := h.Judge(0, 1, 20, 1, false, "later"); j.Cause != Again || j.Prev != "computes" {
		t.Errorf("work after both ended: %+v, want again after computes", j)
	}
	// A hit of an earlier session, and one of this session that ended
	// before, are what came before.
	if j := h.Judge(0, 2, 0, 1, true, "s2 hit"); j.Cause != Hit {
		t.Errorf("s2 hit: %+v", j)
	}
	if j := h.Judge(1, 3, 0, 1, false, "s3 other instance"); j.Cause != NewHere {
		t.Errorf("s3 on another instance: %+v, want NewHere", j)
	}
}
