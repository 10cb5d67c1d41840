// Command benchtable reads the output of the benchmark suite — `go test
// -bench` lines, and the lines the child programs print in the same
// format — and prints one line per figure: its name, our value, the
// reference's, their ratio, the target, and PASS or MISS. Each value is the
// median of the samples (one per -count run) of its benchmark.
//
//	benchtable results/*.txt
//
// A figure whose benchmarks are missing from the input is printed as
// "no data" and makes benchtable exit with status 1; a missed target does
// not, since the table is a report.
package main

import (
	"bufio"
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
	samples := samples{}
	if len(os.Args) == 1 {
		samples.read(os.Stdin)
	}
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(2)
		}
		samples.read(f)
		f.Close()
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tours\treference\tratio\ttarget\tresult")
	missing := false
	for _, f := range figures {
		line, ok := f.eval(samples)
		if !ok {
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

// metric names one benchmark's values in one unit.
type metric struct{ name, unit string }

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
// out), else the comparison of the medians.
func (f figure) eval(s samples) (string, bool) {
	ourValues := s[f.ours.name][f.ours.unit]
	refValues := s[f.ref.name][f.ref.unit]
	if len(ourValues) == 0 || (f.ref.name != "" && len(refValues) == 0) {
		return fmt.Sprintf("%s\t-\t-\t-\t%s\tno data", f.title, f.target), false
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
	if len(refValues) > 0 {
		ref = median(refValues)
		compared = compare(ours, ref)
	}
	if len(refValues) > 0 && len(ourValues) == len(refValues) {
		cs := make([]float64, len(ourValues))
		for i := range ourValues {
			cs[i] = compare(ourValues[i], refValues[i])
		}
		compared = median(cs)
	}
	pass := f.pass == nil || f.pass(ours, compared)
	var why []string
	for _, c := range f.extraChecks {
		vs := s[c.m.name][c.m.unit]
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
	refText, compText := "-", "-"
	if f.ref.name != "" {
		refText, compText = f.format(ref), shown(compared)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", f.title, f.format(ours), refText, compText, f.target, result), true
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

// The figures of issue 12, then the extra ones that stayed (7 to 9).
var figures = []figure{
	timesOver("1 level off, Register", metric{"LevelOff", "off-cpu-ns/op"}, metric{"LevelOff", "none-cpu-ns/op"}, 1.03, "none"),
	timesOver("1 (info) empty processor", metric{"LevelOff", "empty-cpu-ns/op"}, metric{"LevelOff", "none-cpu-ns/op"}, 0, ""),
	timesOver("1 (info) level off, WithSpanProcessor", metric{"LevelOff", "offproc-cpu-ns/op"}, metric{"LevelOff", "none-cpu-ns/op"}, 0, ""),
	withChecks(timesOver("2 warm session, process CPU", metric{"SpanCPU/warm", "cpu-ns/op"}, metric{"SpanCPU/bsp", "cpu-ns/op"}, 1.25, "BSP"),
		noneDropped("SpanCPU/warm", "dropped/op")),
	allocsOver("2 warm session, allocs", "SpanCPU/warm", "SpanCPU/bsp", 3),
	withChecks(timesOver("3 kept session, process CPU", metric{"SpanCPU/kept", "cpu-ns/op"}, metric{"SpanCPU/bsp", "cpu-ns/op"}, 1.8, "BSP"),
		noneDropped("SpanCPU/kept", "dropped/op")),
	timesOver("3 (info) kept vs BSP + raw Badger", metric{"SpanCPU/kept", "cpu-ns/op"}, metric{"SpanCPU/bspbadger", "cpu-ns/op"}, 0, ""),
	timesOver("3 (info) BSP + raw Badger vs BSP", metric{"SpanCPU/bspbadger", "cpu-ns/op"}, metric{"SpanCPU/bsp", "cpu-ns/op"}, 0, ""),
	allocsOver("3 (info) kept session, allocs", "SpanCPU/kept", "SpanCPU/bsp", -1),
	withChecks(timesOver("3 steady 20k spans/s, CPU per span", metric{"Footprint/otelrecords", "cpu-ns/span"}, metric{"Footprint/none", "cpu-ns/span"}, 2, "none"),
		noneDropped("Footprint/otelrecords", "dropped")),
	timesOver("3 (info) steady, BSP + raw Badger", metric{"Footprint/badger", "cpu-ns/span"}, metric{"Footprint/none", "cpu-ns/span"}, 0, ""),
	{
		title: "4 8 goroutines x 300k, spans dropped", format: count, target: "= 0", worst: true,
		ours: metric{"Parallel/kept", "dropped-spans"}, pass: func(o, _ float64) bool { return o == 0 },
	},
	timesOver("4 (info) 8 goroutines, time per span", metric{"Parallel/kept", "ns/span"}, metric{"Parallel/bsp", "ns/span"}, 0, ""),
	timesOver("4 (info) 8 goroutines, CPU per span", metric{"Parallel/kept", "cpu-ns/span"}, metric{"Parallel/bsp", "cpu-ns/span"}, 0, ""),
	withChecks(mibOver("5 footprint 10 s, peak RSS over none", metric{"Footprint/otelrecords", "VmHWM-B"}, metric{"Footprint/none", "VmHWM-B"}, 64),
		noneDropped("Footprint/otelrecords", "dropped")),
	mibOver("5 (info) raw Badger, same records", metric{"Footprint/badger", "VmHWM-B"}, metric{"Footprint/none", "VmHWM-B"}, 0),
	withChecks(mibOver("5 long run 60 s, peak heap over none", metric{"FootprintLong/otelrecords", "anonpeak-B"}, metric{"FootprintLong/none", "anonpeak-B"}, 64),
		noneDropped("FootprintLong/otelrecords", "dropped")),
	mibOver("5 (info) long run, peak RSS over none", metric{"FootprintLong/otelrecords", "VmHWM-B"}, metric{"FootprintLong/none", "VmHWM-B"}, 0),
	{
		title: "5 (info) long run, store files mapped / resident", format: mib, target: "-", info: true,
		ours: metric{"FootprintLong/otelrecords", "mapped-B"}, ref: metric{"FootprintLong/otelrecords", "mappedrss-B"},
		shown: func(float64) string { return "-" },
	},
	{
		title: "6 typed read", format: perSec, target: ">= 1.0x Badger",
		ours: metric{"Read/otelrecords", "records/s"}, ref: metric{"Read/badger", "records/s"}, pass: atLeast(1.0),
	},
	{
		title: "6 (info) counts, as records sessions", format: perSec, target: "-", info: true,
		ours: metric{"Count/otelrecords", "records/s"}, ref: metric{"Count/badger", "records/s"},
	},
	{
		title: "7 persistence, span end to durable", format: perSec, target: ">= 0.80x Badger",
		ours: metric{"Persist/otelrecords", "records/s"}, ref: metric{"Persist/badger", "records/s"}, pass: atLeast(0.80),
	},
	{
		title: "7 (info) the same, span creation timed too", format: perSec, target: "-", info: true,
		ours: metric{"Persist/spans", "records/s"}, ref: metric{"Persist/badger", "records/s"},
	},
	{
		title: "8 prune oldest, 100 vs 10 sessions", format: ms, target: "<= 1.5x",
		ours: metric{"Prune/sessions=100", "median-ns/prune"}, ref: metric{"Prune/sessions=10", "median-ns/prune"}, pass: atMost(1.5),
	},
	{
		title: "9 open+close read-write", format: ms, target: "<= 20 ms",
		ours: metric{"Open/rw/otelrecords", "median-ns/open"}, ref: metric{"Open/rw/badger", "median-ns/open"},
		pass: func(o, _ float64) bool { return o <= 20e6 },
	},
	{
		title: "9 open+close read-only", format: ms, target: "<= 20 ms",
		ours: metric{"Open/ro/otelrecords", "median-ns/open"}, ref: metric{"Open/ro/badger", "median-ns/open"},
		pass: func(o, _ float64) bool { return o <= 20e6 },
	},
	{
		title: "9 (info) open+close read-write, a process's first", format: ms, target: "-", info: true,
		ours: metric{"Open/rw/otelrecords-first", "median-ns/open"}, ref: metric{"Open/rw/badger", "median-ns/open"},
	},
	{
		title: "9 (info) open+close read-only, a process's first", format: ms, target: "-", info: true,
		ours: metric{"Open/ro/otelrecords-first", "median-ns/open"}, ref: metric{"Open/ro/badger", "median-ns/open"},
	},
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
		title: title, format: allocs, ours: metric{ours, "allocs/op"}, ref: metric{ref, "allocs/op"},
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
	return check{metric{name, unit}, func(v float64) bool { return v == 0 }, "spans dropped"}
}
