package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otel example:", err)
		os.Exit(1)
	}
}

// The work of the pretend build: keys to tune and kernels to compile.
var (
	tuneKeys = []string{"matmul/f16/128x128", "matmul/f16/256x256", "conv2d/f32/3x3", "reduce/f32/1024"}
	kernels  = []string{"matmul_tiled", "conv2d_winograd", "reduce_tree"}
)

func run(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("otel", flag.ContinueOnError)
	dir := flags.String("dir", "", "store directory (default: the library's default store)")
	reset := flags.Bool("reset", false, "delete this example's sessions from the store, and its cache, then exit")
	var start time.Time
	flags.Func("clock", "run on a pretend clock from this `time` (RFC 3339, in the past): the same records on every machine", func(s string) error {
		t, err := time.Parse(time.RFC3339, s)
		if err == nil && t.After(time.Now()) {
			err = errors.New("not in the past: a session cannot start later than now")
		}
		start = t
		return err
	})
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		d, err := badgerstore.DefaultDir()
		if err != nil {
			return err
		}
		*dir = d
	}
	cache := cacheDir(*dir)
	if *reset {
		return resetStore(out, *dir, cache)
	}

	// The records processor sits on the provider like any other; here it
	// is alone, but a BatchSpanProcessor to OTLP could sit beside it. The
	// store may be the user's own default store: the example keeps every
	// session (no WithKeepSessions), so it deletes nothing it did not
	// write, and -reset deletes only the sessions its service name marks.
	opts := []exporter.Option{exporter.WithLabel("example build")}
	if !start.IsZero() {
		// A clock given makes the session's id its start exactly, not
		// its start with random low bits: the same store every run.
		opts = append(opts, exporter.WithClock(time.Now))
	}
	rec, err := exporter.New(*dir, opts...)
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", serviceName),
			attribute.String("service.version", "1.0.0"),
		)),
	)
	b := &build{tracer: tp.Tracer("github.com/otelrecords/otelrecords/examples/otel"), cache: cache, sleep: time.Sleep}
	if !start.IsZero() {
		clock := newPretendClock(start)
		b.tracer, b.sleep = pretendTracer{Tracer: b.tracer, clock: clock}, clock.sleep
	}
	buildErr := b.run(context.Background())
	// ForceFlush returns once every ended span's record is written (kept
	// session) or held (not kept); Stats then tells which happened.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rec.ForceFlush(ctx); err != nil {
		buildErr = errors.Join(buildErr, err)
	}
	st := rec.Stats()
	// Shutdown flushes what the session recorded and closes the store.
	if err := tp.Shutdown(ctx); err != nil {
		return errors.Join(buildErr, err)
	}
	if buildErr != nil {
		return buildErr
	}

	if st.SessionsKept > 0 {
		fmt.Fprintf(out, "cold run: %d changes, session kept with %d records in %s\n\n", b.changed, st.Written+st.Pending, *dir)
	} else {
		fmt.Fprintf(out, "warm run: everything was cached; nothing written (%d records were held in memory, then let go)\n\n", st.Held+st.Evicted)
	}
	return show(out, *dir)
}

func cacheDir(store string) string { return filepath.Clean(store) + "-cache" }

// serviceName is the example's service.name, written in the Resource of
// each session it keeps: how -reset tells its sessions from the others.
const serviceName = "example-build"

// build is the pretend build: its cache is a directory with one file per
// tuned key or compiled kernel. Its work is sleeping, on the machine's
// clock or (-clock) a pretend one.
type build struct {
	tracer  trace.Tracer
	cache   string
	sleep   func(time.Duration)
	changed int
}

func (b *build) run(ctx context.Context) error {
	if err := os.MkdirAll(b.cache, 0o700); err != nil {
		return err
	}
	b.phase(ctx, "load", func(ctx context.Context) error {
		// A span without records.kind, like those of third-party
		// instrumentation (an HTTP client, a database driver): an implicit
		// mark, recorded only when a record starts inside it, which none
		// does here.
		_, s := b.tracer.Start(ctx, "read manifest", trace.WithAttributes(attribute.Int("kernels", len(kernels))))
		b.sleep(2 * time.Millisecond)
		s.End()
		return nil
	})
	if err := b.phase(ctx, "tune", func(ctx context.Context) error {
		for _, key := range tuneKeys {
			if err := b.tune(ctx, key); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return b.phase(ctx, "compile", func(ctx context.Context) error {
		for _, k := range kernels {
			if err := b.compile(ctx, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// phase runs f inside an explicit mark: a phase the build names, always
// recorded.
func (b *build) phase(ctx context.Context, name string, f func(context.Context) error) error {
	ctx, span := b.tracer.Start(ctx, name, spanbridge.Mark()...)
	defer span.End()
	return f(ctx)
}

// tune looks a key up in the cache; on a miss it benchmarks candidates (one
// nested record each), stores the winner and says the span changed the
// environment.
func (b *build) tune(ctx context.Context, key string) error {
	ctx, span := b.tracer.Start(ctx, "tune "+key, spanbridge.Record("autotune", attribute.String("autotune.key", key))...)
	defer span.End()
	path := b.entry("tune", key)
	if winner, err := os.ReadFile(path); err == nil {
		span.SetAttributes(attribute.Bool("cached", true), attribute.String("winner", string(winner)))
		return nil
	}
	candidates := []string{"naive", "tiled", "vectorized"}
	best, bestCost := "", time.Duration(1<<62)
	for i, c := range candidates {
		_, cs := b.tracer.Start(ctx, "candidate "+c, spanbridge.Record("bench", attribute.String("candidate", c))...)
		cost := time.Duration((len(key)*(i+3)+5*i)%7+1) * 300 * time.Microsecond
		b.sleep(cost)
		cs.SetAttributes(attribute.Int64("cost_us", cost.Microseconds()))
		cs.End()
		if cost < bestCost {
			best, bestCost = c, cost
		}
	}
	if err := os.WriteFile(path, []byte(best), 0o600); err != nil {
		span.RecordError(err)
		return err
	}
	span.SetAttributes(attribute.Bool("cached", false), attribute.String("winner", best),
		attribute.StringSlice("candidates", candidates), spanbridge.Changed())
	b.changed++
	return nil
}

// compile loads a kernel from the cache or compiles and stores it. The
// generated source is a heavy attribute: kept only at level full.
func (b *build) compile(ctx context.Context, kernel string) error {
	_, span := b.tracer.Start(ctx, "compile "+kernel, spanbridge.Record("compile", attribute.String("kernel", kernel))...)
	defer span.End()
	path := b.entry("kernel", kernel)
	if bin, err := os.ReadFile(path); err == nil {
		span.SetAttributes(attribute.Bool("cached", true), attribute.Int("bytes", len(bin)))
		return nil
	}
	source := fmt.Sprintf("kernel void %s(global float* x) { /* ... */ }", kernel)
	span.AddEvent("codegen", trace.WithAttributes(attribute.Int("lines", 42)))
	b.sleep(3 * time.Millisecond)
	bin := []byte(strings.ToUpper(source))
	if err := os.WriteFile(path, bin, 0o600); err != nil {
		span.RecordError(err)
		return err
	}
	span.SetAttributes(attribute.Bool("cached", false), attribute.Int("bytes", len(bin)),
		spanbridge.Full(attribute.String("source", source)), spanbridge.Changed())
	b.changed++
	return nil
}

func (b *build) entry(kind, name string) string {
	return filepath.Join(b.cache, kind+"-"+strings.NewReplacer("/", "_", "\\", "_").Replace(name))
}

// tuneRecord is an autotune record as the build reads it back: typed,
// from the attributes its spans set.
type tuneRecord struct {
	Key    string        `record:"autotune.key"`
	Winner string        `record:"winner"`
	Cached bool          `record:"cached"`
	Wall   time.Duration `record:",wall"`
}

// show prints what the store holds, through the Records reader.
func show(out io.Writer, dir string) error {
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "the store %s is empty: no session has changed anything yet\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	defer st.Close()
	r := sessions.NewRecords(st)

	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tSTARTED\tLABEL\tPID")
	var last sessions.SessionID
	for s, err := range r.Sessions() {
		if err != nil {
			return err
		}
		last = s.ID
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\n", s.ID, time.UnixMilli(s.StartedUnixMs).Format(time.DateTime), s.Label, s.Process)
	}
	w.Flush()
	if last == 0 {
		return nil
	}

	// Merged across kinds in stamp order, and indented by parent, the
	// records tell the session's story.
	fmt.Fprintf(out, "\nthe newest session, %d, in stamp order:\n", last)
	depth := map[sessions.SpanID]int{}
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  SEQ\tOFFSET\tWALL\tKIND\tNAME")
	for kr, err := range r.InStampOrder(nil, sessions.InSession(last)) {
		if err != nil {
			return err
		}
		d := 0
		if p, ok := depth[kr.Record.ParentSpanID]; ok {
			d = p + 1
		}
		depth[kr.Record.SpanID] = d
		fmt.Fprintf(w, "  %d\t+%v\t%v\t%s\t%s%s\n", kr.Stamp.Seq, kr.Stamp.Offset.Round(time.Microsecond),
			kr.Record.Wall.Round(time.Microsecond), kr.Kind, strings.Repeat("  ", d), kr.Record.Name)
	}
	w.Flush()
	fmt.Fprintln(out, "\nautotune records, typed:")
	for t, err := range sessions.Typed[tuneRecord](r, "autotune", sessions.InSession(last)) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %-20s winner=%-10s cached=%v took %v\n", t.Record.Key, t.Record.Winner, t.Record.Cached, t.Record.Wall.Round(time.Microsecond))
	}
	if n := r.Skipped(); n > 0 {
		fmt.Fprintf(out, "(%d values did not decode and were skipped)\n", n)
	}
	return nil
}
