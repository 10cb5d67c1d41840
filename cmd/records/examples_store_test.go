package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The stores the help's examples read (examples_linux_test.go): a models
// build recorded by a program, through exporter.New, with the explicit
// span times and the clock that make a store the same on every run
// (exporter.WithClock), so that the sessions are the ones the examples
// name.
//
// The default store holds four sessions:
//
//	helpS1  models build, cold: fetches the weights, tunes matmul_1024
//	        (tiled wins; the simd candidate fails), compiles matmul and
//	        softmax (2s)
//	helpS2  an hour later, its cache lost: fetches again (another user
//	        agent, twice as long: 2ms → 4ms), tunes again (simd wins),
//	        finds matmul in the cache, compiles softmax again, 25% slower
//	now-2h  models build 1.1.0: finds matmul_1024's tune in its cache (a
//	        hit: simd), compiles matmul again (a new version)
//	now-1h  unit tests (service tests): compiles its fixtures
//
// The last two are recent, for pull --since, and their ids have the
// random-looking low digits of a real clock's nanoseconds, which jq 1.6
// would round were they JSON numbers (it prints the first two right: 17
// digits hold them).
var (
	helpS1 = goldenStart1 // 1735787045006000000, the help's session
	helpS2 = goldenStart2 // 1735790645006000000, its --against-session
	helpB1 = goldenStartB // the other store's one session
)

// spanned is a span of a pretend run: a record of kind (a mark when kind
// is ""), started at its offset from the session's start and lasting
// wall, holding its children.
type spanned struct {
	name     string
	kind     string
	at, wall time.Duration
	attrs    []attribute.KeyValue // its inputs, given as it starts
	outputs  []attribute.KeyValue // what it found, set before it ends
	changed  bool
	failed   string // the error status's description
	children []spanned
}

// count is how many records the span and those in it are.
func (s spanned) count() int {
	n := 1
	for _, c := range s.children {
		n += c.count()
	}
	return n
}

// names returns the names of s and of those in it, in the order they
// start: stamp order.
func (s spanned) names() []string {
	names := []string{s.name}
	for _, c := range s.children {
		names = append(names, c.names()...)
	}
	return names
}

// kinds counts s and those in it by kind, a mark's being marks.
func (s spanned) kinds() map[string]int {
	kinds := map[string]int{}
	var add func(spanned)
	add = func(s spanned) {
		kinds[cmp.Or(s.kind, "marks")]++
		for _, c := range s.children {
			add(c)
		}
	}
	add(s)
	return kinds
}

// pretendRun is one run of a program: one session.
type pretendRun struct {
	start   time.Time
	service string
	version string
	label   string
	root    spanned
}

// id is the session's id, as every --json prints it.
func (r pretendRun) id() string { return strconv.FormatInt(r.start.UnixNano(), 10) }

// writeRuns records each run into the store at dir, one process's
// exporter after another, as the runs of a build would.
func writeRuns(t *testing.T, dir string, runs ...pretendRun) {
	t.Helper()
	for _, r := range runs {
		exp, err := exporter.New(dir, exporter.WithLabel(r.label), exporter.WithClock(time.Now))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", r.service), attribute.String("service.version", r.version))))
		startSpan(context.Background(), tp.Tracer("example.com/build"), r.start, r.root)
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// startSpan starts s and its children, in order, and ends them: a span
// ends after those it holds, as in a program.
func startSpan(ctx context.Context, tracer trace.Tracer, start time.Time, s spanned) {
	opts := spanbridge.Mark(s.attrs...)
	if s.kind != "" {
		attrs := s.attrs
		if s.changed {
			attrs = append(attrs[:len(attrs):len(attrs)], spanbridge.Changed())
		}
		opts = spanbridge.Record(s.kind, attrs...)
	}
	ctx, span := tracer.Start(ctx, s.name, append(opts, trace.WithTimestamp(start.Add(s.at)))...)
	for _, c := range s.children {
		startSpan(ctx, tracer, start, c)
	}
	span.SetAttributes(s.outputs...)
	if s.failed != "" {
		span.SetStatus(codes.Error, s.failed)
	}
	span.End(trace.WithTimestamp(start.Add(s.at + s.wall)))
}

// fetch, tune, compile and bench are the work of the pretend build.
func fetch(at, wall time.Duration, agent string, size int) spanned {
	return spanned{name: "GET weights", kind: "download", at: at, wall: wall, changed: true, attrs: []attribute.KeyValue{
		attribute.String("url.full", "https://models.example.com/qwen3-8b.bin"),
		attribute.String("user_agent.original", agent),
	}, outputs: []attribute.KeyValue{attribute.Int("http.response.body.size", size)}}
}

func tune(at, wall time.Duration, tried int, winner string, benches ...spanned) spanned {
	return spanned{name: "tune matmul", kind: "autotune", at: at, wall: wall, changed: true, children: benches, attrs: []attribute.KeyValue{
		attribute.String("autotune.key", "matmul_1024"),
		attribute.StringSlice("candidates", []string{"tiled", "simd"}),
	}, outputs: []attribute.KeyValue{attribute.Int("tried", tried), attribute.String("winner", winner)}}
}

func bench(at, wall time.Duration, candidate, failed string) spanned {
	return spanned{name: "bench " + candidate, kind: "bench", at: at, wall: wall, failed: failed,
		attrs: []attribute.KeyValue{attribute.String("candidate", candidate)}}
}

func compile(name, key, kernel string, at, wall time.Duration) spanned {
	return spanned{name: name, kind: "compile", at: at, wall: wall, changed: true, attrs: []attribute.KeyValue{
		attribute.String("compile.key", key),
		attribute.String("kernel", kernel),
	}}
}

const ms = time.Millisecond

// helpRuns are the runs of the default store, oldest first; now places
// the recent two.
func helpRuns(now time.Time) []pretendRun {
	return []pretendRun{
		{helpS1, "build", "1.0.0", "models build", spanned{name: "plan", at: 0, wall: 2700 * ms, children: []spanned{
			fetch(0, 2*ms, "build/1.0", 1048576),
			tune(2*ms, 40*ms, 2, "tiled", bench(2*ms, 10*ms, "tiled", ""), bench(12*ms, 9*ms, "simd", "illegal instruction")),
			compile("compile matmul", "matmul_1024", "matmul_f16", 42*ms, 60*ms),
			compile("compile softmax", "softmax_512", "softmax_f16", 102*ms, 2000*ms),
		}}},
		{helpS2, "build", "1.0.0", "models build", spanned{name: "plan", at: 0, wall: 2650 * ms, children: []spanned{
			fetch(0, 4*ms, "build/1.1", 1048580),
			tune(4*ms, 42*ms, 2, "simd", bench(4*ms, 10*ms, "tiled", ""), bench(14*ms, 9*ms, "simd", "illegal instruction")),
			{name: "lookup matmul", kind: "cache", at: 46 * ms, wall: ms, attrs: []attribute.KeyValue{attribute.String("cache.key", "matmul_1024")}},
			compile("compile softmax", "softmax_512", "softmax_f16", 47*ms, 2500*ms),
		}}},
		{now.Add(-2 * time.Hour), "build", "1.1.0", "models build", spanned{name: "plan", at: 0, wall: 80 * ms, children: []spanned{
			{name: "tune matmul", kind: "autotune", at: 0, wall: ms, attrs: tune(0, 0, 0, "").attrs, outputs: []attribute.KeyValue{attribute.String("winner", "simd")}},
			compile("compile matmul", "matmul_1024", "matmul_f16", ms, 60*ms),
		}}},
		{now.Add(-time.Hour), "tests", "1.1.0", "unit tests", spanned{name: "test run", at: 0, wall: 30 * ms, children: []spanned{
			compile("compile fixtures", "fixtures", "fixtures", ms, 20*ms),
		}}},
	}
}

// otherRuns are the runs of the other store (B, a laptop's or a CI
// runner's): one build that tuned matmul_1024 to tiled after trying 3
// candidates and compiled softmax under another compile.key.
func otherRuns() []pretendRun {
	return []pretendRun{
		{helpB1, "build", "1.0.0", "models build", spanned{name: "plan", at: 0, wall: 150 * ms, children: []spanned{
			tune(0, 40*ms, 3, "tiled"),
			compile("compile matmul", "matmul_1024", "matmul_f16", 40*ms, 60*ms),
			compile("compile softmax", "softmax_1024", "softmax_f16", 100*ms, 50*ms),
		}}},
	}
}

// manyRuns are 23 builds a minute apart, for prune: each compiles one
// kernel.
func manyRuns() []pretendRun {
	var runs []pretendRun
	for i := range 23 {
		runs = append(runs, pretendRun{helpS1.Add(time.Duration(i) * time.Minute), "build", "1.0.0", fmt.Sprintf("build %d", i+1),
			compile("compile matmul", "matmul_1024", "matmul_f16", 0, 5*ms)})
	}
	return runs
}

// copyStore copies the store at from to to, as a user copies a store
// between machines: every file, its mode kept, and its holes (Badger's
// DISCARD file is a megabyte of them).
func copyStore(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
}

// writerEnv, when set, makes TestExampleStoreWriter write a store: the
// runs it names (help, other or many), the time the recent ones are
// placed from (RFC 3339), and the store's directory, a line each.
const writerEnv = "RECORDS_TEST_WRITE_STORE"

// TestExampleStoreWriter is the program that writes the examples' stores,
// run by writeExampleRuns as a process of its own: an exporter gives a
// session the id its start names only once in a process (the ids a
// process took are taken), and the examples name the ids, so each store
// is written by a new process, however often the tests run.
func TestExampleStoreWriter(t *testing.T) {
	spec := os.Getenv(writerEnv)
	if spec == "" {
		t.Skip("a process TestExamples runs, to write a store")
	}
	parts := strings.SplitN(spec, "\n", 3)
	if len(parts) != 3 {
		t.Fatalf("%s=%q: want the runs, a time and a directory, a line each", writerEnv, spec)
	}
	which, dir := parts[0], parts[2]
	now, err := time.Parse(time.RFC3339Nano, parts[1])
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]pretendRun{"help": helpRuns(now), "other": otherRuns(), "many": manyRuns()}[which]
	if runs == nil {
		t.Fatalf("no runs %q", which)
	}
	writeRuns(t, dir, runs...)
}

// noExitSleep is the GORACE option that spares a process the race
// detector's second of sleep as it exits (a -race test binary run as a
// program).
const noExitSleep = "atexit_sleep_ms=0"

// writeExampleRuns writes the runs each store of stores names (help,
// other or many; as of now) into it, a store by its directory, each by a
// process of its own (TestExampleStoreWriter), all at once.
func writeExampleRuns(t *testing.T, now time.Time, stores map[string]string) {
	t.Helper()
	type writing struct {
		which string
		cmd   *exec.Cmd
		out   bytes.Buffer
	}
	var ws []*writing
	for dir, which := range stores {
		w := &writing{which: which, cmd: exec.Command(os.Args[0], "-test.run=^TestExampleStoreWriter$")}
		w.cmd.Env = append(os.Environ(), writerEnv+"="+which+"\n"+now.Format(time.RFC3339Nano)+"\n"+dir,
			"GORACE="+os.Getenv("GORACE")+" "+noExitSleep)
		w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.out
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("writing the %s store: %v\n%s", w.which, err, w.out.String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}
