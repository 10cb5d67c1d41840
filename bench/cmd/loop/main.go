// Command loop is figure 10, the plain loop: the simplest program a user
// would write to see what the exporter costs. It ends 200,000 spans, each
// started with four attributes (records.kind and a string, an int and a
// bool, built in the loop as a program builds them; on the kept side the
// bool is records.effect=changed), then calls the
// provider's ForceFlush once, and takes the wall time per span. Every
// provider runs in this one process, in turns, a fresh provider (and a
// fresh store) each turn, in a rotating order, so that what one leaves in
// the heap falls on each in turn:
//
//	none     a TracerProvider with no processor
//	none2    the same again: the A/A control, so that the table shows how
//	         far two identical providers differ on this machine (figure
//	         10's level off runs the very code of none)
//	bsp      the SDK's BatchSpanProcessor into an exporter that discards
//	off      ours at level off, plugged in with Register
//	warm     ours on a session never kept (observed records, held)
//	kept     ours on a kept session: every span written to the store
//
// It prints, in the format of `go test -bench`, the median over the
// rounds of each provider's wall ns per span, and of its allocations per
// span (runtime.MemStats), so bench/run's table reads it like the rest;
// with -each, one such line per provider and round instead, so that the
// table takes the medians itself, pairs each round's providers and shows
// the spread (bench/run runs it so).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func main() {
	spans := flag.Int("spans", 200_000, "spans each turn ends")
	rounds := flag.Int("rounds", 10, "turns of every provider")
	only := flag.String("providers", "none,none2,bsp,off,warm,kept", "the providers, comma-separated")
	each := flag.Bool("each", false, "print every round's line rather than the medians")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loop:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*spans, *rounds, *only, *each); err != nil {
		fmt.Fprintln(os.Stderr, "loop:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// side is one provider the loop measures.
type side struct {
	name    string
	changes bool // its spans say records.effect=changed: the session is kept
	make    func(dir string) (*sdktrace.TracerProvider, func() error, error)
	ns      []float64 // wall ns per span, one a round
	allocs  []float64 // allocations per span, one a round
	gc      []float64 // the garbage collector's CPU ns per span, one a round
	gcIdle  []float64 // of which its idle mark workers', one a round
}

func run(spans, rounds int, only string, each bool) error {
	all := []*side{
		{name: "none", make: func(string) (*sdktrace.TracerProvider, func() error, error) {
			return sdktrace.NewTracerProvider(), nil, nil
		}},
		{name: "none2", make: func(string) (*sdktrace.TracerProvider, func() error, error) {
			return sdktrace.NewTracerProvider(), nil, nil
		}},
		{name: "bsp", make: func(string) (*sdktrace.TracerProvider, func() error, error) {
			p := sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
			return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p)), nil, nil
		}},
		{name: "off", make: func(dir string) (*sdktrace.TracerProvider, func() error, error) {
			exp, err := exporter.New(dir, exporter.WithLevel(sessions.LevelOff))
			if err != nil {
				return nil, nil, err
			}
			tp := sdktrace.NewTracerProvider()
			exp.Register(tp)
			return tp, func() error { return exp.Shutdown(context.Background()) }, nil
		}},
		{name: "warm", make: ours(sessions.LevelBasic)},
		{name: "kept", make: ours(sessions.LevelBasic), changes: true},
	}
	var sides []*side
	for _, s := range all {
		if slices.Contains(strings.Split(only, ","), s.name) {
			sides = append(sides, s)
		}
	}
	if len(sides) == 0 {
		return fmt.Errorf("no provider named in %q", only)
	}
	tmp, err := os.MkdirTemp("", "otelrecords-loop-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for r := range rounds {
		for j := range sides {
			s := sides[(r+j)%len(sides)]
			dir := filepath.Join(tmp, fmt.Sprintf("%s-%d", s.name, r))
			t, err := turn(s, dir, spans)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			s.ns = append(s.ns, t.ns)
			s.allocs = append(s.allocs, t.allocs)
			s.gc = append(s.gc, t.gc)
			s.gcIdle = append(s.gcIdle, t.gcIdle)
			os.RemoveAll(dir)
		}
	}
	for _, s := range sides {
		fmt.Fprintf(os.Stderr, "loop: %s ns/span by round: %.0f\n", s.name, s.ns)
		if each {
			for r := range s.ns {
				fmt.Printf("BenchmarkLoop/%s \t%d\t%.0f ns/op\t%.2f allocs/op\t%.0f gc-cpu-ns/op\t%.0f gc-idle-cpu-ns/op\n",
					s.name, spans, s.ns[r], s.allocs[r], s.gc[r], s.gcIdle[r])
			}
			continue
		}
		fmt.Printf("BenchmarkLoop/%s \t%d\t%.0f ns/op\t%.2f allocs/op\t%.0f gc-cpu-ns/op\t%.0f gc-idle-cpu-ns/op\n",
			s.name, spans, median(s.ns), median(s.allocs), median(s.gc), median(s.gcIdle))
	}
	return nil
}

// ours returns the maker of our exporter's provider at level.
func ours(level sessions.Level) func(string) (*sdktrace.TracerProvider, func() error, error) {
	return func(dir string) (*sdktrace.TracerProvider, func() error, error) {
		exp, err := exporter.New(dir, exporter.WithLevel(level))
		if err != nil {
			return nil, nil, err
		}
		return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp)), nil, nil
	}
}

// perSpan is what one turn measured, per span.
type perSpan struct {
	ns, allocs float64
	// gc and gcIdle are the garbage collector's CPU time, and of it what
	// its idle mark workers took: the Go runtime marks on every idle P
	// while a cycle runs, so on a quiet machine a heap the collector must
	// mark costs CPU a loaded machine never shows.
	gc, gcIdle float64
}

// gcMetrics are the runtime/metrics a turn reads before and after.
var gcMetrics = []string{"/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/gc/mark/idle:cpu-seconds"}

func readGC() (total, idle float64) {
	ms := make([]metrics.Sample, len(gcMetrics))
	for i, name := range gcMetrics {
		ms[i].Name = name
	}
	metrics.Read(ms)
	return ms[0].Value.Float64(), ms[1].Value.Float64()
}

// turn runs the loop once on a fresh provider of s: the wall time per
// span from the first span to the return of ForceFlush, the allocations
// per span, and the garbage collector's CPU per span.
func turn(s *side, dir string, spans int) (perSpan, error) {
	tp, shutdown, err := s.make(dir)
	if err != nil {
		return perSpan{}, err
	}
	ctx := context.Background()
	tr := tp.Tracer("loop")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	gc0, idle0 := readGC()
	t0 := time.Now()
	for i := range spans {
		_, span := tr.Start(ctx, "compile", trace.WithAttributes(
			spanbridge.KindKey.String("compile"),
			attribute.String("unit", "pkg/"+strconv.Itoa(i%512)),
			attribute.Int("n", i),
			fourth(s.changes, i),
		))
		span.End()
	}
	if err := tp.ForceFlush(ctx); err != nil {
		return perSpan{}, err
	}
	wall := time.Since(t0)
	gc1, idle1 := readGC()
	runtime.ReadMemStats(&after)
	if err := tp.Shutdown(ctx); err != nil {
		return perSpan{}, err
	}
	if shutdown != nil {
		if err := shutdown(); err != nil {
			return perSpan{}, err
		}
	}
	n := float64(spans)
	return perSpan{
		ns:     float64(wall.Nanoseconds()) / n,
		allocs: float64(after.Mallocs-before.Mallocs) / n,
		gc:     (gc1 - gc0) * 1e9 / n,
		gcIdle: (idle1 - idle0) * 1e9 / n,
	}, nil
}

// fourth is a span's fourth attribute: a bool, or on the kept side the
// effect that keeps the session.
func fourth(changes bool, i int) attribute.KeyValue {
	if changes {
		return spanbridge.EffectKey.String(spanbridge.EffectChanged)
	}
	return attribute.Bool("opt", i%2 == 0)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
