package main

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// input is bench output of two rounds, as bench/run collects it: go test
// lines with a -GOMAXPROCS suffix, a child program's line without one,
// and lines that are not results.
const input = `goos: linux
BenchmarkSpanCPU/bsp-2         	  200000	      3000 ns/op	      3000 cpu-ns/op	     6 allocs/op
BenchmarkSpanCPU/kept-2        	  200000	      9000 ns/op	      6000 cpu-ns/op	    23 allocs/op
BenchmarkStoreFloor/writebatch-2	  200000	      3000 ns/op	      5000 cpu-ns/op
BenchmarkSpanCPU/bsp-2         	  200000	      3000 ns/op	      4000 cpu-ns/op	     6 allocs/op
BenchmarkSpanCPU/kept-2        	  200000	      9000 ns/op	      9600 cpu-ns/op	    23 allocs/op
BenchmarkStoreFloor/writebatch-2	  200000	      3000 ns/op	      6000 cpu-ns/op
BenchmarkLoop/off 	200000	1000 ns/op	8.80 allocs/op
BenchmarkLoop/none 	200000	1000 ns/op	8.80 allocs/op
BenchmarkSpanCPU/bsp-2 ran out of time
BenchmarkOdd-2 	x	12 ns/op
PASS
`

func read(t *testing.T, text string) samples {
	t.Helper()
	s := samples{}
	s.read(strings.NewReader(text))
	return s
}

func TestReadKeepsEverySampleByNameAndUnit(t *testing.T) {
	s := read(t, input)
	if got := s["SpanCPU/bsp"]["cpu-ns/op"]; !slices.Equal(got, []float64{3000, 4000}) {
		t.Errorf("SpanCPU/bsp cpu-ns/op = %v, want [3000 4000]", got)
	}
	if got := s["SpanCPU/kept"]["allocs/op"]; !slices.Equal(got, []float64{23, 23}) {
		t.Errorf("SpanCPU/kept allocs/op = %v, want [23 23]", got)
	}
	if got := s["Loop/off"]["allocs/op"]; !slices.Equal(got, []float64{8.8}) {
		t.Errorf("Loop/off allocs/op = %v, want [8.8]", got)
	}
	if _, ok := s["Odd"]; ok {
		t.Error("a line without an iteration count was read")
	}
	if len(s) != 5 {
		t.Errorf("read %d benchmarks, want 5: %v", len(s), s)
	}
}

func TestSumIsRoundByRound(t *testing.T) {
	s := read(t, input)
	floor := metric{name: "SpanCPU/bsp", unit: "cpu-ns/op", plus: &metric{name: "StoreFloor/writebatch", unit: "cpu-ns/op"}}
	if got := floor.values(s); !slices.Equal(got, []float64{8000, 10000}) {
		t.Errorf("sum = %v, want [8000 10000]", got)
	}
	// One more round of the BSP than of the floor: the sum of the medians.
	s["SpanCPU/bsp"]["cpu-ns/op"] = append(s["SpanCPU/bsp"]["cpu-ns/op"], 5000)
	if got := floor.values(s); !slices.Equal(got, []float64{4000 + 5500}) {
		t.Errorf("sum of unpaired rounds = %v, want [9500]", got)
	}
	missing := metric{name: "SpanCPU/bsp", unit: "cpu-ns/op", plus: &metric{name: "StoreFloor/stream", unit: "cpu-ns/op"}}
	if got := missing.values(s); got != nil {
		t.Errorf("sum with a missing metric = %v, want none", got)
	}
}

// columns returns f's line in s, split into its columns, and whether its
// data was there.
func columns(t *testing.T, f figure, s samples) ([]string, bool) {
	t.Helper()
	line, ok := f.eval(s)
	cols := strings.Split(line, "\t")
	if len(cols) != 8 {
		t.Fatalf("%q has %d columns, want 8", line, len(cols))
	}
	return cols, ok
}

func TestEvalComparesRoundByRound(t *testing.T) {
	s := read(t, input)
	s["SpanCPU/kept"]["cpu-ns/op"] = append(s["SpanCPU/kept"]["cpu-ns/op"], 10000)
	s["SpanCPU/bsp"]["cpu-ns/op"] = append(s["SpanCPU/bsp"]["cpu-ns/op"], 5000)
	f := timesOver("kept", the("SpanCPU/kept", "cpu-ns/op"), the("SpanCPU/bsp", "cpu-ns/op"), 2.2, "BSP")
	// Rounds: 6000/3000 = 2.0, 9600/4000 = 2.4, 10000/5000 = 2.0. The
	// median of the ratios is 2.0 (the ratio of the medians would be 2.25).
	cols, ok := columns(t, f, s)
	want := []string{"kept", "9600 ns", "4000 ns", "2.00x", "2.00x..2.40x", "n=3", "<= 2.2x BSP", "PASS"}
	if !ok || !slices.Equal(cols, want) {
		t.Errorf("line = %q (data %v), want %q", cols, ok, want)
	}
	f.pass = atMost(1.9)
	if cols, _ := columns(t, f, s); cols[7] != "MISS" {
		t.Errorf("result at 2.0x against 1.9x: %q, want MISS", cols[7])
	}
}

func TestEvalUnpairedRoundsCompareMedians(t *testing.T) {
	s := read(t, input)
	s["SpanCPU/kept"]["cpu-ns/op"] = append(s["SpanCPU/kept"]["cpu-ns/op"], 12000)
	f := timesOver("kept", the("SpanCPU/kept", "cpu-ns/op"), the("SpanCPU/bsp", "cpu-ns/op"), 2.2, "BSP")
	cols, _ := columns(t, f, s)
	// 9600 / 3500: no pairs, so the spread is of ours.
	want := []string{"kept", "9600 ns", "3500 ns", "2.74x", "6000 ns..12000 ns", "n=3/2", "<= 2.2x BSP", "MISS"}
	if !slices.Equal(cols, want) {
		t.Errorf("line = %q, want %q", cols, want)
	}
}

func TestEvalAbsoluteTargetSpreadsOurs(t *testing.T) {
	s := read(t, `BenchmarkOpen/rw 10 1 ns/op 18000000 otelrecords-ns/open 9000000 badger-ns/open
BenchmarkOpen/rw 10 1 ns/op 24000000 otelrecords-ns/open 12000000 badger-ns/open
BenchmarkOpen/rw 10 1 ns/op 19000000 otelrecords-ns/open 9500000 badger-ns/open
`)
	f := figureTitled(t, "9 open+close read-write")
	cols, _ := columns(t, f, s)
	want := []string{f.title, "19.0 ms", "9.5 ms", "2.00x", "18.0 ms..24.0 ms", "n=3", "<= 20 ms", "PASS"}
	if !slices.Equal(cols, want) {
		t.Errorf("line = %q, want %q", cols, want)
	}
}

func TestEvalReportsMissingDataAndFailedChecks(t *testing.T) {
	s := read(t, input)
	f := timesOver("floor", the("StoreFloor/stream", "cpu-ns/op"), the("StoreFloor/writebatch", "cpu-ns/op"), 0, "")
	if cols, ok := columns(t, f, s); ok || cols[7] != "no data" {
		t.Errorf("a missing benchmark gave %q (data %v)", cols, ok)
	}
	s = read(t, `BenchmarkSpanCPU/warm-2 200000 1 ns/op 3100 cpu-ns/op 0 dropped/op
BenchmarkSpanCPU/bsp-2 200000 1 ns/op 3000 cpu-ns/op
BenchmarkSpanCPU/warm-2 200000 1 ns/op 3100 cpu-ns/op 0.5 dropped/op
BenchmarkSpanCPU/bsp-2 200000 1 ns/op 3000 cpu-ns/op
`)
	cols, ok := columns(t, figureTitled(t, "2 warm session, process CPU"), s)
	if !ok || cols[3] != "1.03x" || cols[7] != "MISS (spans dropped)" {
		t.Errorf("a round that dropped spans gave %q (data %v), want 1.03x and MISS (spans dropped)", cols, ok)
	}
}

func TestFloorLine(t *testing.T) {
	s := read(t, input)
	cols, ok := columns(t, figureTitled(t, "3 floor: BSP + Badger WriteBatch of the same records, vs BSP"), s)
	// Rounds: (3000+5000)/3000 = 2.67x, (4000+6000)/4000 = 2.50x.
	want := []string{"3 floor: BSP + Badger WriteBatch of the same records, vs BSP", "9000 ns", "3500 ns", "2.58x", "2.50x..2.67x", "n=2", "-", "info"}
	if !ok || !slices.Equal(cols, want) {
		t.Errorf("line = %q (data %v), want %q", cols, ok, want)
	}
}

func TestOneRoundHasNoSpread(t *testing.T) {
	s := read(t, input)
	cols, _ := columns(t, figureTitled(t, "10 plain loop, level off (Register) vs none, wall"), s)
	want := []string{"10 plain loop, level off (Register) vs none, wall", "1000 ns", "1000 ns", "1.00x", "-", "n=1", "<= 1.03x none", "PASS"}
	if !slices.Equal(cols, want) {
		t.Errorf("line = %q, want %q", cols, want)
	}
}

// TestTargets holds the table to issue 25's targets, figure 3 kept to
// issue 48's.
func TestTargets(t *testing.T) {
	for title, target := range map[string]string{
		"1 level off, Register":                             "<= 1.03x none",
		"2 warm session, process CPU":                       "<= 1.25x BSP",
		"3 kept session, process CPU":                       "<= 1.8x BSP",
		"3 steady 20k spans/s, CPU per span":                "<= 2x none",
		"5 footprint 10 s, peak RSS over none":              "<= +64 MiB",
		"6 typed read":                                      ">= 1.0x Badger",
		"7 persistence, span end to durable":                ">= 0.80x Badger",
		"4 8 goroutines x 300k, spans dropped":              "= 0",
		"9 open+close read-write":                           "<= 20 ms",
		"9 open+close read-only":                            "<= 20 ms",
		"10 plain loop, warm vs BSP, wall":                  "<= 1.25x BSP",
		"10 plain loop, level off (Register) vs none, wall": "<= 1.03x none",
		"10 (info) plain loop, kept vs BSP, wall":           "-",
	} {
		if f := figureTitled(t, title); f.target != target {
			t.Errorf("%s: target %q, want %q", title, f.target, target)
		}
	}
	for _, f := range figures {
		if f.info != (f.target == "-") || f.format == nil {
			t.Errorf("%s: info %v, target %q, format set %v", f.title, f.info, f.target, f.format != nil)
		}
	}
}

func figureTitled(t *testing.T, title string) figure {
	t.Helper()
	for _, f := range slices.Concat(figures, peerFigures) {
		if f.title == title {
			return f
		}
	}
	t.Fatalf("no figure %q", title)
	return figure{}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		vs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.vs); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("median(%v) = %v, want %v", c.vs, got, c.want)
		}
	}
}
