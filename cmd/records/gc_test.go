package main

import "testing"

// The collector's pace gives a heap gcHeadroom to grow, within bounds: a
// small heap as Go would (twice what is live), a larger one 4 MiB
// more, down to a tenth more at least.
func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100}, {1 << 20, 100}, {4 << 20, 100}, {8 << 20, 50}, {16 << 20, 25}, {40 << 20, 10}, {1 << 30, 10},
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}
