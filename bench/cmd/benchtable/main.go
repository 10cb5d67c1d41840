// Command benchtable reads the output of the benchmark suite — `go test
// -bench` lines, and the lines the child programs print in the same
// format — and prints one line per figure: its name, our value, the
// reference's, their ratio, the spread of the rounds, how many rounds
// there were, the target, and PASS or MISS. Each value is the median of
// the samples (one per round) of its benchmark.
//
//	benchtable results/*.txt
//
// A figure whose benchmarks are missing from the input is printed as
// "no data" and makes benchtable exit with status 1; a missed target does
// not, since the table is a report. With -present, such a figure is left
// out instead: the table of the figures a run selected (BENCH_ONLY).
//
//	benchtable -present results/*.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() {
	present := flag.Bool("present", false, "print only the figures the input has data for, and exit 0 without the others")
	flag.Parse()
	samples := samples{}
	if flag.NArg() == 0 {
		samples.read(os.Stdin)
	}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(2)
		}
		samples.read(f)
		f.Close()
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tours\treference\tratio\tspread\tn\ttarget\tresult")
	missing := false
	for _, f := range slices.Concat(figures, peerFigures) {
		line, ok := f.eval(samples)
		if !ok {
			if *present {
				continue
			}
			missing = true
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
	if missing {
		os.Exit(1)
	}
}

// samples maps a benchmark name (without the -GOMAXPROCS suffix) and a unit
// to the values measured, one per run.
type samples map[string]map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

// read adds the samples of every benchmark line of r: a name starting
// "Benchmark", an iteration count, then value-unit pairs.
func (s samples) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			if s[name] == nil {
				s[name] = map[string][]float64{}
			}
			s[name][fields[i+1]] = append(s[name][fields[i+1]], v)
		}
	}
}

// median returns the median of vs, which must not be empty.
func median(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// metric names one benchmark's values in one unit, plus, when plus is
// set, another metric's: the sum of the two, round by round.
type metric struct {
	name, unit string
	plus       *metric
}

// the returns the metric of a benchmark's values in unit.
func the(name, unit string) metric { return metric{name: name, unit: unit} }

// values returns m's samples in s, in the order they were read. The
// samples of a sum are the round-by-round sums when both metrics have as
// many, else the one sum of their medians; none if either has none.
func (m metric) values(s samples) []float64 {
	vs := s[m.name][m.unit]
	if m.plus == nil || len(vs) == 0 {
		return vs
	}
	ps := m.plus.values(s)
	switch {
	case len(ps) == 0:
		return nil
	case len(ps) != len(vs):
		return []float64{median(vs) + median(ps)}
	}
	sums := make([]float64, len(vs))
	for i := range vs {
		sums[i] = vs[i] + ps[i]
	}
	return sums
}

// figure is one line of the table.
type figure struct {
	title     string
	ours, ref metric
	format    func(float64) string
	target    string
	// compare relates ours to the reference (nil: ours / ref), shown
	// formats it (nil: as a ratio), and pass says whether the target is
	// met, given our median and the compared value.
	compare     func(ours, ref float64) float64
	shown       func(float64) string
	pass        func(ours, compared float64) bool
	extraChecks []check // further conditions of the target
	info        bool    // no target: it explains another line
	worst       bool    // ours is the largest of the runs, not their median
	noCompare   bool    // ours and the reference are shown, not compared
	absolute    bool    // the target judges ours, not the comparison: so does the spread
}

// check is a condition a figure's target also needs, on one metric: on
// the largest of its runs (a span dropped in any run is a miss).
type check struct {
	m    metric
	ok   func(float64) bool
	what string
}

// eval returns the figure's line, and false if its data is missing.
//
// The compared value is the median of the run-by-run comparisons when ours
// and the reference have as many samples (each run measures both, side by
// side, so a spell of load on the shared machine falls on both and cancels
// out), else the comparison of the medians. The spread is the least and
// the largest of what the target judges: the run-by-run comparisons when
// there are some and the target is not absolute, else our samples.
func (f figure) eval(s samples) (string, bool) {
	ourValues := f.ours.values(s)
	var refValues []float64
	if f.ref.name != "" {
		refValues = f.ref.values(s)
	}
	if len(ourValues) == 0 || (f.ref.name != "" && len(refValues) == 0) {
		return fmt.Sprintf("%s\t-\t-\t-\t-\t-\t%s\tno data", f.title, f.target), false
	}
	compare, shown := f.compare, f.shown
	if compare == nil {
		compare = func(o, r float64) float64 { return o / r }
	}
	if shown == nil {
		shown = func(v float64) string { return fmt.Sprintf("%.2fx", v) }
	}
	ours, ref, compared := median(ourValues), 0.0, 0.0
	if f.worst {
		ours = slices.Max(ourValues)
	}
	n := strconv.Itoa(len(ourValues))
	spread, spreadShown := ourValues, f.format
	if len(refValues) > 0 {
		ref = median(refValues)
		compared = compare(ours, ref)
		if len(refValues) != len(ourValues) {
			n += "/" + strconv.Itoa(len(refValues))
		}
	}
	if len(refValues) > 0 && len(ourValues) == len(refValues) && !f.noCompare {
		cs := make([]float64, len(ourValues))
		for i := range ourValues {
			cs[i] = compare(ourValues[i], refValues[i])
		}
		compared = median(cs)
		if !f.absolute {
			spread, spreadShown = cs, shown
		}
	}
	pass := f.pass == nil || f.pass(ours, compared)
	var why []string
	for _, c := range f.extraChecks {
		vs := c.m.values(s)
		if len(vs) == 0 || !c.ok(slices.Max(vs)) {
			pass = false
			why = append(why, c.what)
		}
	}
	result := "PASS"
	if f.info {
		result = "info"
	} else if !pass {
		result = "MISS"
	}
	if len(why) > 0 {
		result += " (" + strings.Join(why, ", ") + ")"
	}
	refText, compText, spreadText := "-", "-", "-"
	if f.ref.name != "" {
		refText = f.format(ref)
		if !f.noCompare {
			compText = shown(compared)
		}
	}
	if len(spread) > 1 {
		spreadText = spreadShown(slices.Min(spread)) + ".." + spreadShown(slices.Max(spread))
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\tn=%s\t%s\t%s", f.title, f.format(ours), refText, compText, spreadText, n, f.target, result), true
}

func atMost(limit float64) func(_, ratio float64) bool {
	return func(_, ratio float64) bool { return ratio <= limit }
}

func atLeast(limit float64) func(_, ratio float64) bool {
	return func(_, ratio float64) bool { return ratio >= limit }
}

func difference(o, r float64) float64 { return o - r }

func ns(v float64) string     { return fmt.Sprintf("%.0f ns", v) }
func allocs(v float64) string { return fmt.Sprintf("%.0f allocs/op", v) }
func perSec(v float64) string { return fmt.Sprintf("%.0f rec/s", v) }
func ms(v float64) string     { return fmt.Sprintf("%.1f ms", v/1e6) }
func mib(v float64) string    { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
func plusMiB(v float64) string {
	return fmt.Sprintf("%+.1f MiB", v/(1<<20))
}
func plusCount(v float64) string { return fmt.Sprintf("%+.0f", v) }
func count(v float64) string     { return fmt.Sprintf("%.0f", v) }

// The figures of issue 12, the extra ones that stayed (7 to 9), and issue
// 25's plain loop (10), with issue 25's targets, and figure 3 kept at
// issue 48's: it stays where it was (1.70x when issue 48 was filed).
var figures = []figure{
	timesOver("1 level off, Register", the("LevelOff", "off-cpu-ns/op"), the("LevelOff", "none-cpu-ns/op"), 1.03, "none"),
	timesOver("1 (info) A/A control: a second provider without a processor", the("LevelOff", "none2-cpu-ns/op"), the("LevelOff", "none-cpu-ns/op"), 0, ""),
	timesOver("1 (info) empty processor", the("LevelOff", "empty-cpu-ns/op"), the("LevelOff", "none-cpu-ns/op"), 0, ""),
	timesOver("1 (info) level off, WithSpanProcessor", the("LevelOff", "offproc-cpu-ns/op"), the("LevelOff", "none-cpu-ns/op"), 0, ""),
	withChecks(timesOver("2 warm session, process CPU", the("SpanCPU/warm", "cpu-ns/op"), the("SpanCPU/bsp", "cpu-ns/op"), 1.25, "BSP"),
		noneDropped("SpanCPU/warm", "dropped/op")),
	allocsOver("2 warm session, allocs", "SpanCPU/warm", "SpanCPU/bsp", 3),
	timesOver("2 (info) warm session, taking turns", the("SpanTurns/2p", "warm-cpu-ns/op"), the("SpanTurns/2p", "bsp-cpu-ns/op"), 0, ""),
	timesOver("2 (info) A/A control, taking turns", the("SpanTurns/2p", "aa-cpu-ns/op"), the("SpanTurns/2p", "bsp-cpu-ns/op"), 0, ""),
	timesOver("2 (info) warm session, taking turns on one P", the("SpanTurns/1p", "warm-cpu-ns/op"), the("SpanTurns/1p", "bsp-cpu-ns/op"), 0, ""),
	withChecks(timesOver("3 kept session, process CPU", the("SpanCPU/kept", "cpu-ns/op"), the("SpanCPU/bsp", "cpu-ns/op"), 1.8, "BSP"),
		noneDropped("SpanCPU/kept", "dropped/op")),
	timesOver("3 (info) kept vs BSP + raw Badger", the("SpanCPU/kept", "cpu-ns/op"), the("SpanCPU/bspbadger", "cpu-ns/op"), 0, ""),
	timesOver("3 (info) BSP + raw Badger vs BSP", the("SpanCPU/bspbadger", "cpu-ns/op"), the("SpanCPU/bsp", "cpu-ns/op"), 0, ""),
	allocsOver("3 (info) kept session, allocs", "SpanCPU/kept", "SpanCPU/bsp", -1),
	// The floor of the line above: the BSP's CPU per span plus the CPU
	// per record of Badger's cheapest write of the same records, run by
	// run, over the BSP's.
	timesOver("3 floor: BSP + Badger WriteBatch of the same records, vs BSP",
		metric{name: "SpanCPU/bsp", unit: "cpu-ns/op", plus: &metric{name: "StoreFloor/writebatch", unit: "cpu-ns/op"}},
		the("SpanCPU/bsp", "cpu-ns/op"), 0, ""),
	timesOver("3 (info) floor: one StreamWriter vs WriteBatch, per record", the("StoreFloor/stream", "cpu-ns/op"), the("StoreFloor/writebatch", "cpu-ns/op"), 0, ""),
	timesOver("3 (info) floor: StreamWriter per 2,500 vs WriteBatch", the("StoreFloor/stream-incremental-2500", "cpu-ns/op"), the("StoreFloor/writebatch", "cpu-ns/op"), 0, ""),
	timesOver("3 (info) floor: StreamWriter per 20,000 vs WriteBatch", the("StoreFloor/stream-incremental-20000", "cpu-ns/op"), the("StoreFloor/writebatch", "cpu-ns/op"), 0, ""),
	withChecks(timesOver("3 steady 20k spans/s, CPU per span", the("Footprint/otelrecords", "cpu-ns/span"), the("Footprint/none", "cpu-ns/span"), 2, "none"),
		noneDropped("Footprint/otelrecords", "dropped")),
	timesOver("3 (info) steady, BSP + raw Badger", the("Footprint/badger", "cpu-ns/span"), the("Footprint/none", "cpu-ns/span"), 0, ""),
	// The steady line's floor, as above: a program without a processor
	// plus Badger's cheapest write of each span's record, over the program.
	timesOver("3 (info) steady floor: none + Badger WriteBatch per span, vs none",
		metric{name: "Footprint/none", unit: "cpu-ns/span", plus: &metric{name: "StoreFloor/writebatch", unit: "cpu-ns/op"}},
		the("Footprint/none", "cpu-ns/span"), 0, ""),
	{
		title: "4 8 goroutines x 300k, spans dropped", format: count, target: "= 0", worst: true, absolute: true,
		ours: the("Parallel/kept", "dropped-spans"), pass: func(o, _ float64) bool { return o == 0 },
	},
	timesOver("4 (info) 8 goroutines, time per span", the("Parallel/kept", "ns/span"), the("Parallel/bsp", "ns/span"), 0, ""),
	timesOver("4 (info) 8 goroutines, CPU per span", the("Parallel/kept", "cpu-ns/span"), the("Parallel/bsp", "cpu-ns/span"), 0, ""),
	withChecks(mibOver("5 footprint 10 s, peak RSS over none", the("Footprint/otelrecords", "VmHWM-B"), the("Footprint/none", "VmHWM-B"), 64),
		noneDropped("Footprint/otelrecords", "dropped")),
	mibOver("5 (info) raw Badger, same records", the("Footprint/badger", "VmHWM-B"), the("Footprint/none", "VmHWM-B"), 0),
	withChecks(mibOver("5 long run 60 s, peak heap over none", the("FootprintLong/otelrecords", "anonpeak-B"), the("FootprintLong/none", "anonpeak-B"), 64),
		noneDropped("FootprintLong/otelrecords", "dropped")),
	mibOver("5 (info) long run, peak RSS over none", the("FootprintLong/otelrecords", "VmHWM-B"), the("FootprintLong/none", "VmHWM-B"), 0),
	{
		title: "5 (info) long run, store files mapped / resident", format: mib, target: "-", info: true,
		ours: the("FootprintLong/otelrecords", "mapped-B"), ref: the("FootprintLong/otelrecords", "mappedrss-B"),
		noCompare: true,
	},
	{
		title: "6 typed read", format: perSec, target: ">= 1.0x Badger",
		ours: the("Read/otelrecords", "records/s"), ref: the("Read/badger", "records/s"), pass: atLeast(1.0),
	},
	{
		title: "6 (info) counts, as records sessions", format: perSec, target: "-", info: true,
		ours: the("Count/otelrecords", "records/s"), ref: the("Count/badger", "records/s"),
	},
	{
		title: "7 persistence, span end to durable", format: perSec, target: ">= 0.80x Badger",
		ours: the("Persist/otelrecords", "records/s"), ref: the("Persist/badger", "records/s"), pass: atLeast(0.80),
	},
	{
		title: "7 (info) the same, span creation timed too", format: perSec, target: "-", info: true,
		ours: the("Persist/spans", "records/s"), ref: the("Persist/badger", "records/s"),
	},
	{
		title: "8 prune oldest, 100 vs 10 sessions", format: ms, target: "<= 1.5x",
		ours: the("Prune/sessions=100", "median-ns/prune"), ref: the("Prune/sessions=10", "median-ns/prune"), pass: atMost(1.5),
	},
	{
		title: "9 open+close read-write", format: ms, target: "<= 20 ms",
		ours: the("Open/rw", "otelrecords-ns/open"), ref: the("Open/rw", "badger-ns/open"),
		pass: func(o, _ float64) bool { return o <= 20e6 }, absolute: true,
	},
	{
		title: "9 open+close read-only", format: ms, target: "<= 20 ms",
		ours: the("Open/ro", "otelrecords-ns/open"), ref: the("Open/ro", "badger-ns/open"),
		pass: func(o, _ float64) bool { return o <= 20e6 }, absolute: true,
	},
	{
		title: "9 open+close read-write, a process's first, vs Badger", format: ms, target: "<= 1.1x Badger",
		ours: the("Open/rw", "first-ns/open"), ref: the("Open/rw", "badger-ns/open"), pass: atMost(1.1),
	},
	{
		title: "9 open+close read-only, a process's first, vs Badger", format: ms, target: "<= 1.1x Badger",
		ours: the("Open/ro", "first-ns/open"), ref: the("Open/ro", "badger-ns/open"), pass: atMost(1.1),
	},
	{
		title: "9 (info) open+close read-write, a store never checked here", format: ms, target: "-", info: true,
		ours: the("Open/rw", "unseen-ns/open"), ref: the("Open/rw", "badger-ns/open"),
	},
	{
		title: "9 (info) open+close read-only, a store never checked here", format: ms, target: "-", info: true,
		ours: the("Open/ro", "unseen-ns/open"), ref: the("Open/ro", "badger-ns/open"),
	},
	timesOver("10 plain loop, warm vs BSP, wall", the("Loop/warm", "ns/op"), the("Loop/bsp", "ns/op"), 1.25, "BSP"),
	timesOver("10 plain loop, level off (Register) vs none, wall", the("Loop/off", "ns/op"), the("Loop/none", "ns/op"), 1.03, "none"),
	timesOver("10 (info) plain loop, A/A control: none vs none, wall", the("Loop/none2", "ns/op"), the("Loop/none", "ns/op"), 0, ""),
	timesOver("10 (info) plain loop, kept vs BSP, wall", the("Loop/kept", "ns/op"), the("Loop/bsp", "ns/op"), 0, ""),
}

// timesOver is a figure of nanoseconds against a reference: at most limit
// times the reference (named refName in the target), or an info line when
// limit is 0.
func timesOver(title string, ours, ref metric, limit float64, refName string) figure {
	f := figure{title: title, format: ns, ours: ours, ref: ref, target: "-", info: true}
	if limit > 0 {
		f.target, f.info = "<= "+strconv.FormatFloat(limit, 'f', -1, 64)+"x "+refName, false
		f.pass = atMost(limit)
	}
	return f
}

// allocsOver is a figure of allocations per op over a reference's: at
// most limit more, or an info line when limit is negative.
func allocsOver(title, ours, ref string, limit float64) figure {
	f := figure{
		title: title, format: allocs, ours: the(ours, "allocs/op"), ref: the(ref, "allocs/op"),
		compare: difference, shown: plusCount, target: "-", info: true,
	}
	if limit >= 0 {
		f.target, f.info = fmt.Sprintf("<= BSP + %.0f", limit), false
		f.pass = func(_, d float64) bool { return d <= limit }
	}
	return f
}

// mibOver is a figure of bytes over a reference, run by run: at most
// limit MiB over it, or an info line when limit is 0.
func mibOver(title string, ours, ref metric, limit float64) figure {
	f := figure{title: title, format: mib, ours: ours, ref: ref, compare: difference, shown: plusMiB, target: "-", info: true}
	if limit > 0 {
		f.target, f.info = fmt.Sprintf("<= +%.0f MiB", limit), false
		f.pass = func(_, d float64) bool { return d <= limit*(1<<20) }
	}
	return f
}

// withChecks returns f with further conditions on its target.
func withChecks(f figure, checks ...check) figure {
	f.extraChecks = append(f.extraChecks, checks...)
	return f
}

// noneDropped is the check that no round dropped a span.
func noneDropped(name, unit string) check {
	return check{the(name, unit), func(v float64) bool { return v == 0 }, "spans dropped"}
}
