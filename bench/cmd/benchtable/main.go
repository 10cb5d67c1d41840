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

// median returns the median of a benchmark's values in a unit.
func (s samples) median(name, unit string) (float64, bool) {
	vs := s[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
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
	minus     *metric // subtracted from ours, run by run (figure 3's baseline heap)
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
}

// check is a condition a figure's target also needs, on one metric.
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
	ourValues := slices.Clone(s[f.ours.name][f.ours.unit])
	if f.minus != nil {
		base := s[f.minus.name][f.minus.unit]
		if len(base) != len(ourValues) {
			ourValues = nil
		}
		for i := range ourValues {
			ourValues[i] -= base[i]
		}
	}
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
		v, ok := s.median(c.m.name, c.m.unit)
		if !ok || !c.ok(v) {
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

func ns(v float64) string     { return fmt.Sprintf("%.0f ns/op", v) }
func allocs(v float64) string { return fmt.Sprintf("%.0f allocs/op", v) }
func perSec(v float64) string { return fmt.Sprintf("%.0f rec/s", v) }
func ms(v float64) string     { return fmt.Sprintf("%.1f ms", v/1e6) }
func kib(v float64) string    { return fmt.Sprintf("%.0f KiB", v/1024) }
func mib(v float64) string    { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
func plusMiB(v float64) string {
	return fmt.Sprintf("%+.1f MiB", v/(1<<20))
}
func plusCount(v float64) string { return fmt.Sprintf("%+.0f", v) }
func percent(v float64) string   { return fmt.Sprintf("%.1f%%", 100*v) }

// pendingBudget is the exporter's default pending budget
// (exporter.DefaultPendingBudget), which figure 3 runs with.
const pendingBudget = 1 << 20

var figures = []figure{
	{
		title: "1 hot path, 1 goroutine", format: ns, target: "<= 1.10x BSP",
		ours: metric{"HotPath/otelrecords", "ns/op"}, ref: metric{"HotPath/batch", "ns/op"}, pass: atMost(1.10),
	},
	{
		title: "1 hot path allocs, 1 goroutine", format: allocs, target: "<= BSP + 1",
		ours: metric{"HotPath/otelrecords", "allocs/op"}, ref: metric{"HotPath/batch", "allocs/op"},
		compare: difference, shown: plusCount, pass: func(_, d float64) bool { return d <= 1 },
	},
	{
		title: "1 hot path, 8 goroutines", format: ns, target: "<= 1.10x BSP",
		ours: metric{"HotPathParallel/otelrecords", "ns/op"}, ref: metric{"HotPathParallel/batch", "ns/op"}, pass: atMost(1.10),
	},
	{
		title: "1 (info) hot path over no processor", format: ns, target: "-", info: true,
		ours: metric{"HotPath/otelrecords", "ns/op"}, ref: metric{"HotPath/none", "ns/op"},
	},
	{
		title: "1 (info) spans dropped, 1 goroutine", format: percent, target: "-", info: true,
		ours: metric{"HotPath/otelrecords", "dropped/op"},
	},
	{
		title: "1 (info) spans dropped, 8 goroutines", format: percent, target: "-", info: true,
		ours: metric{"HotPathParallel/otelrecords", "dropped/op"},
	},
	{
		title: "1 (info) caller's own CPU, 1 goroutine", format: ns, target: "-", info: true,
		ours: metric{"HotPathCaller/otelrecords", "caller-cpu-ns/op"}, ref: metric{"HotPathCaller/batch", "caller-cpu-ns/op"},
	},
	{
		title: "1 (info) span calls, writer held still", format: ns, target: "-", info: true,
		ours: metric{"HotPathQueued/otelrecords", "ns/op"}, ref: metric{"HotPathQueued/batch", "ns/op"},
	},
	{
		title: "1 (info) allocs, writer held still", format: allocs, target: "-", info: true,
		ours: metric{"HotPathQueued/otelrecords", "allocs/op"}, ref: metric{"HotPathQueued/batch", "allocs/op"},
		compare: difference, shown: plusCount,
	},
	{
		title: "2 level off", format: ns, target: "<= 1.03x none",
		ours: metric{"HotPath/off", "ns/op"}, ref: metric{"HotPath/none", "ns/op"}, pass: atMost(1.03),
	},
	{
		title: "2 (info) empty processor over none", format: ns, target: "-", info: true,
		ours: metric{"HotPath/emptyprocessor", "ns/op"}, ref: metric{"HotPath/none", "ns/op"},
	},
	{
		title: "3 warm session heap held", format: kib, target: "<= budget+64KiB, no disk",
		ours: metric{"Warm/otelrecords", "heap-B"}, minus: &metric{"Warm/baseline", "heap-B"},
		ref:     metric{"Warm/otelrecords", "held-B"}, // what the budget counts now: for scale
		compare: func(o, _ float64) float64 { return o / pendingBudget },
		shown:   func(v float64) string { return fmt.Sprintf("%.3fx budget", v) },
		pass:    func(o, _ float64) bool { return o <= pendingBudget+64<<10 },
		extraChecks: []check{
			{metric{"Warm/otelrecords", "disk-B"}, func(v float64) bool { return v == 0 }, "bytes on disk"},
			{metric{"Warm/otelrecords", "dropped"}, func(v float64) bool { return v == 0 }, "spans dropped"},
		},
	},
	{
		title: "4 persistence, span end to durable", format: perSec, target: ">= 0.80x Badger",
		ours: metric{"Persist/otelrecords", "records/s"}, ref: metric{"Persist/badger", "records/s"}, pass: atLeast(0.80),
	},
	{
		title: "4 (info) the same, span creation timed too", format: perSec, target: "-", info: true,
		ours: metric{"Persist/spans", "records/s"}, ref: metric{"Persist/badger", "records/s"},
	},
	{
		title: "5 typed read", format: perSec, target: ">= 0.50x Badger",
		ours: metric{"Read/otelrecords", "records/s"}, ref: metric{"Read/badger", "records/s"}, pass: atLeast(0.50),
	},
	{
		title: "6 prune oldest, 100 vs 10 sessions", format: ms, target: "<= 1.5x",
		ours: metric{"Prune/sessions=100", "median-ns/prune"}, ref: metric{"Prune/sessions=10", "median-ns/prune"}, pass: atMost(1.5),
	},
	{
		title: "7 footprint, peak RSS over none", format: mib, target: "<= +64 MiB",
		ours: metric{"Footprint/otelrecords", "VmHWM-B"}, ref: metric{"Footprint/none", "VmHWM-B"},
		compare: difference, shown: plusMiB, pass: func(_, d float64) bool { return d <= 64<<20 },
	},
	{
		title: "7 (info) raw Badger writing as much", format: mib, target: "-", info: true,
		ours: metric{"Footprint/badger", "VmHWM-B"}, ref: metric{"Footprint/none", "VmHWM-B"},
		compare: difference, shown: plusMiB,
	},
	{
		title: "8 open+close read-write", format: ms, target: "<= 20 ms",
		ours: metric{"Open/rw/otelrecords", "median-ns/open"}, ref: metric{"Open/rw/badger", "median-ns/open"},
		pass: func(o, _ float64) bool { return o <= 20e6 },
	},
	{
		title: "8 open+close read-only", format: ms, target: "<= 20 ms",
		ours: metric{"Open/ro/otelrecords", "median-ns/open"}, ref: metric{"Open/ro/badger", "median-ns/open"},
		pass: func(o, _ float64) bool { return o <= 20e6 },
	},
}
