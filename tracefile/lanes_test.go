package tracefile

import (
	"cmp"
	"flag"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// long runs the hostile-shape tests at the sizes RELIABILITY.md reports:
//
//	go test -run 'LayOut' -v ./tracefile/ -long
var long = flag.Bool("long", false, "run the hostile-shape tests at the sizes RELIABILITY.md reports")

// layOutByLane is the lane layout as it was first written: each span asks
// every lane in turn. It is kept as the reference layOut must agree with.
func layOutByLane(spans []span) (depths []int) {
	var lanes [][]time.Duration
	for _, i := range layOutOrder(spans) {
		s := &spans[i]
		placed := false
		for l, open := range lanes {
			for len(open) > 0 && open[len(open)-1] <= s.start {
				open = open[:len(open)-1]
			}
			lanes[l] = open
			if len(open) > 0 && open[len(open)-1] < s.end {
				continue
			}
			s.lane, s.depth = l, len(open)
			lanes[l] = append(open, s.end)
			depths[l] = max(depths[l], s.depth)
			placed = true
			break
		}
		if !placed {
			s.lane, s.depth = len(lanes), 0
			lanes = append(lanes, []time.Duration{s.end})
			depths = append(depths, 0)
		}
	}
	return depths
}

// overlapping returns n spans starting a microsecond apart, each lasting
// up to most: records of many goroutines, overlapping at random.
func overlapping(rng *rand.Rand, n int, most time.Duration) []span {
	spans := make([]span, n)
	for i := range spans {
		start := time.Duration(i) * time.Microsecond
		wall := time.Duration(rng.Int64N(int64(most)))
		if rng.IntN(5) == 0 {
			wall = 0
		}
		spans[i] = span{seq: uint64(i), start: start, end: start + wall}
	}
	rng.Shuffle(n, func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
	return spans
}

// staircase returns n spans starting a microsecond apart, each lasting
// until just after the last starts: each overlaps every other partly, so
// each needs a lane of its own, and asking every lane in turn asks them
// all.
func staircase(n int) []span {
	spans := make([]span, n)
	for i := range spans {
		start := time.Duration(i) * time.Microsecond
		spans[i] = span{seq: uint64(i), start: start, end: start + time.Duration(n)*time.Microsecond}
	}
	return spans
}

// TestLayOutAgreesWithAskingEveryLane checks the tree-based layout puts
// every span in the lane, at the depth, that asking every lane in turn
// does: the layout is the same, only cheaper.
func TestLayOutAgreesWithAskingEveryLane(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		n := rng.IntN(500) + 1
		var spans []span
		switch trial % 4 {
		case 0:
			spans = overlapping(rng, n, time.Duration(rng.Int64N(int64(time.Millisecond)))+1)
		case 1: // coarse times: many equal starts and ends
			spans = make([]span, n)
			for i := range spans {
				start := time.Duration(rng.IntN(20))
				spans[i] = span{seq: uint64(i), start: start, end: start + time.Duration(rng.IntN(8))}
			}
		case 2: // nested marks with stragglers
			spans = make([]span, n)
			for i := range spans {
				start := time.Duration(rng.IntN(1000))
				spans[i] = span{seq: uint64(i), start: start, end: start + time.Duration(rng.IntN(1000-int(start)+1))}
			}
		case 3:
			spans = staircase(n)
		}
		want := slices.Clone(spans)
		wantDepths := layOutByLane(want)
		gotDepths := layOut(spans)
		if !slices.Equal(gotDepths, wantDepths) || !slices.Equal(spans, want) {
			t.Fatalf("trial %d (%d spans): layOut differs from asking every lane: depths %v, want %v", trial, n, gotDepths, wantDepths)
		}
	}
	// Walls that overflow, and the ends of the range, lay out too.
	edge := []span{{start: time.Duration(1<<63 - 1), end: -5}, {start: -1 << 63, end: 1<<63 - 1}, {start: 0, end: 0}, {start: 5, end: 1<<63 - 1}}
	if depths := layOut(edge); len(depths) == 0 {
		t.Fatal("no lanes")
	}
}

// TestLayOutManyLanes lays out records that each overlap every other
// partly, so each takes a lane of its own. Asking every lane in turn cost
// records × lanes: 14 s for 100,000 records. The tree costs records ×
// log(lanes).
func TestLayOutManyLanes(t *testing.T) {
	n := 100_000
	if *long {
		n = 1_000_000
	}
	spans := staircase(n)
	began := time.Now()
	depths := layOut(spans)
	took := time.Since(began)
	t.Logf("%d records in %d lanes: laid out in %v", n, len(depths), took)
	if len(depths) != n {
		t.Fatalf("%d lanes for %d records that each overlap every other partly", len(depths), n)
	}
	if took > 5*time.Second {
		t.Errorf("laying out %d records in %d lanes took %v", n, len(depths), took)
	}
}

// TestLayOut lays out random spans, many overlapping, and checks the
// promise of every lane: its spans nest or follow one another, both in
// nanoseconds and once rounded down to the microseconds of a Chrome trace.
func TestLayOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		n := rng.IntN(200) + 1
		spans := make([]span, n)
		for i := range spans {
			start := time.Duration(rng.Int64N(int64(10 * time.Millisecond)))
			wall := time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
			if rng.IntN(5) == 0 {
				wall = 0
			}
			spans[i] = span{seq: uint64(i), start: start, end: start + wall}
		}
		depths := layOut(spans)
		for _, unit := range []func(time.Duration) int64{
			func(d time.Duration) int64 { return int64(d) },
			func(d time.Duration) int64 {
				return micros(sessions.SessionID(time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC).UnixNano()), int64(d))
			},
		} {
			lanes := map[int][]span{}
			for _, s := range spans {
				if s.lane < 0 || s.lane >= len(depths) || s.depth > depths[s.lane] {
					t.Fatalf("trial %d: span %+v outside the lanes %v", trial, s, depths)
				}
				lanes[s.lane] = append(lanes[s.lane], s)
			}
			for l, ss := range lanes {
				// By start, the longer first on a tie: the one around first.
				slices.SortStableFunc(ss, func(a, b span) int {
					return cmp.Or(cmp.Compare(unit(a.start), unit(b.start)), cmp.Compare(unit(b.end), unit(a.end)))
				})
				var open []int64
				for _, s := range ss {
					from, to := unit(s.start), unit(s.end)
					for len(open) > 0 && open[len(open)-1] <= from {
						open = open[:len(open)-1]
					}
					if len(open) > 0 && open[len(open)-1] < to {
						t.Fatalf("trial %d, lane %d: span %+v overlaps the one around it", trial, l, s)
					}
					open = append(open, to)
				}
			}
		}
	}
}
