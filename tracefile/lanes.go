package tracefile

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// span is where a record lies on its session's time axis, and where the
// lane layout put it.
type span struct {
	seq        uint64
	start, end time.Duration // offset, offset + wall
	lane       int           // the lane it is drawn in
	depth      int           // how many records of its lane contain it
}

// layOut assigns every span a lane and a depth, so that within a lane the
// spans either nest (one lies wholly inside another, one level deeper) or
// follow one another, and never partly overlap: what the Chrome trace
// format asks of the complete events of one thread, and what keeps the
// report's bars apart. Records of one session often overlap without
// nesting (work on several goroutines, a record that outlives the mark it
// was stamped in); each such record goes to the first lane where it fits,
// or a new one. It returns the deepest depth of each lane, one per lane.
//
// Spans are laid out by start (the longer first on a tie, so that the
// enclosing one comes first), whatever order they come in; the result is
// written back into spans, whose order is kept.
//
// It costs O(n log n) for n spans, whatever their overlap: each lane is a
// stack of its open spans, and a tree over the lanes' innermost open ends
// finds both the spans that have ended and the first lane a span fits in,
// each in O(log lanes). (Asking every lane in turn cost n × lanes: 14 s for
// 100,000 records overlapping at random.)
func layOut(spans []span) (depths []int) {
	var (
		stacks [][]time.Duration // each lane's open spans' ends, innermost last
		tops   laneTops
	)
	for _, i := range layOutOrder(spans) {
		s := &spans[i]
		// Within the tree's range, below its mark for an empty lane; a
		// wall that overflows ends the span where it starts.
		start := min(s.start, noSpan-1)
		end := min(max(s.end, start), noSpan-1)
		// Close the spans that ended by the time this one starts: the spans
		// still to come start no earlier.
		for l := tops.endedBy(start); l >= 0; l = tops.endedBy(start) {
			open := stacks[l]
			for len(open) > 0 && open[len(open)-1] <= start {
				open = open[:len(open)-1]
			}
			stacks[l] = open
			tops.set(l, topOf(open))
		}
		// A lane fits when its innermost open span, if any, ends no
		// earlier than this one: then this one nests in it.
		l := tops.firstEndingFrom(end)
		if l < 0 {
			l = tops.add()
			stacks = append(stacks, nil)
			depths = append(depths, 0)
		}
		s.lane, s.depth = l, len(stacks[l])
		stacks[l] = append(stacks[l], end)
		depths[l] = max(depths[l], s.depth)
		tops.set(l, end)
	}
	return depths
}

// layOutOrder returns the indexes of spans in the order they are laid
// out: by start, the longer first on a tie, so that the enclosing one
// comes first; in the order given among equals.
func layOutOrder(spans []span) []int {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &spans[a], &spans[b]
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(y.end, x.end)
	})
	return order
}

// noSpan marks an empty lane in laneTops: it fits any span, and has
// nothing to close.
const noSpan = time.Duration(math.MaxInt64)

func topOf(open []time.Duration) time.Duration {
	if len(open) == 0 {
		return noSpan
	}
	return open[len(open)-1]
}

// laneTops holds, for each lane, the end of its innermost open span
// (noSpan when it has none), in a segment tree that keeps the least and
// the greatest below each node: the least finds a lane with a span that
// has ended, the greatest the first lane a span fits in.
type laneTops struct {
	lanes  int
	leaves int             // a power of two, at least lanes
	lo, hi []time.Duration // per node, 1 the root, leaves from index leaves
}

// add adds an empty lane, and returns its index.
func (t *laneTops) add() int {
	if t.lanes == t.leaves {
		t.grow()
	}
	l := t.lanes
	t.lanes++
	t.set(l, noSpan)
	return l
}

func (t *laneTops) grow() {
	leaves := max(1, 2*t.leaves)
	lo, hi := make([]time.Duration, 2*leaves), make([]time.Duration, 2*leaves)
	for l := range leaves {
		// A leaf with no lane is never the least nor fits.
		lo[leaves+l], hi[leaves+l] = noSpan, math.MinInt64
		if l < t.lanes {
			lo[leaves+l], hi[leaves+l] = t.lo[t.leaves+l], t.hi[t.leaves+l]
		}
	}
	for i := leaves - 1; i > 0; i-- {
		lo[i], hi[i] = min(lo[2*i], lo[2*i+1]), max(hi[2*i], hi[2*i+1])
	}
	t.leaves, t.lo, t.hi = leaves, lo, hi
}

// set sets lane l's innermost open end.
func (t *laneTops) set(l int, top time.Duration) {
	i := t.leaves + l
	t.lo[i], t.hi[i] = top, top
	for i /= 2; i > 0; i /= 2 {
		t.lo[i], t.hi[i] = min(t.lo[2*i], t.lo[2*i+1]), max(t.hi[2*i], t.hi[2*i+1])
	}
}

// endedBy returns a lane whose innermost open span ends at or before at,
// or -1.
func (t *laneTops) endedBy(at time.Duration) int {
	if t.lanes == 0 || t.lo[1] > at {
		return -1
	}
	i := 1
	for i < t.leaves {
		if i = 2 * i; t.lo[i] > at {
			i++
		}
	}
	return i - t.leaves
}

// firstEndingFrom returns the first lane whose innermost open span ends
// at or after end, or which has none, or -1.
func (t *laneTops) firstEndingFrom(end time.Duration) int {
	if t.lanes == 0 || t.hi[1] < end {
		return -1
	}
	i := 1
	for i < t.leaves {
		if i = 2 * i; t.hi[i] < end {
			i++
		}
	}
	return i - t.leaves
}
