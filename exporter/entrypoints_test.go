package exporter_test

// The conformance suite of the two entry points: every scenario runs
// through the SpanProcessor (spans ended in this process's SDK) and
// through the Importer (the same spans, ended elsewhere and imported), and
// both must store the same records.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// entryPoint records what scenario does with its tracer into store.
type entryPoint struct {
	name string
	// run returns what the entry point counted, after its Shutdown.
	run func(t *testing.T, store sessions.Store, scenario func(trace.Tracer), opts ...setting) exporter.Stats
}

var entryPoints = []entryPoint{
	{"SpanProcessor", func(t *testing.T, store sessions.Store, scenario func(trace.Tracer), opts ...setting) exporter.Stats {
		exp, err := exporter.New("", append(settings(opts).exporter(), exporter.WithStore(nopClose{store}))...)
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp), sdktrace.WithResource(suiteResource))
		scenario(tp.Tracer("suite"))
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return exp.Stats()
	}},
	{"Importer", func(t *testing.T, store sessions.Store, scenario func(trace.Tracer), opts ...setting) exporter.Stats {
		im, err := importer.New("", importer.Config{}, append(settings(opts).importer(), importer.WithStore(store))...)
		if err != nil {
			t.Fatal(err)
		}
		ended := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ended), sdktrace.WithResource(suiteResource))
		scenario(tp.Tracer("suite"))
		if _, err := im.Import(context.Background(), importBatch(ended.Ended())); err != nil {
			t.Fatal(err)
		}
		if err := im.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return im.Stats().Stats
	}},
}

// A setting is one option, as each entry point takes it.
type setting struct {
	exp exporter.Option
	imp importer.Option
}

func withMarks(m exporter.Marks) setting {
	return setting{exporter.WithMarks(m), importer.WithMarks(m)}
}

func withLevel(l sessions.Level) setting {
	return setting{exporter.WithLevel(l), importer.WithLevel(l)}
}

func withKeepBy(k exporter.KeepBy) setting {
	return setting{exporter.WithKeepBy(k), importer.WithKeepBy(k)}
}

func withPendingBudget(n int) setting {
	return setting{exporter.WithPendingBudget(n), importer.WithPendingBudget(n)}
}

type settings []setting

func (ss settings) exporter() (out []exporter.Option) {
	for _, s := range ss {
		out = append(out, s.exp)
	}
	return out
}

func (ss settings) importer() (out []importer.Option) {
	for _, s := range ss {
		out = append(out, s.imp)
	}
	return out
}

var suiteResource = resource.NewSchemaless(attribute.String("service.name", "build"), attribute.Int("process.pid", 4242))

// importBatch is spans of the SDK as a sender's batch: what a Collector
// would make of them after they crossed OTLP.
func importBatch(spans []sdktrace.ReadOnlySpan) importer.Batch {
	b := importer.Batch{}
	for _, s := range spans {
		b.Resource = s.Resource().Attributes()
		b.Spans = append(b.Spans, imported(s))
	}
	return b
}

func imported(s sdktrace.ReadOnlySpan) importer.Span {
	return importer.Span{
		TraceID: s.SpanContext().TraceID(), SpanID: s.SpanContext().SpanID(),
		ParentSpanID: s.Parent().SpanID(), ParentRemote: s.Parent().IsRemote(),
		TraceState: s.SpanContext().TraceState().String(),
		Name:       s.Name(), Kind: s.SpanKind(), Start: s.StartTime(), End: s.EndTime(),
		Attributes: s.Attributes(), Events: s.Events(), Links: s.Links(), Status: s.Status(),
		Scope:             s.InstrumentationScope(),
		DroppedAttributes: s.DroppedAttributes(), DroppedEvents: s.DroppedEvents(), DroppedLinks: s.DroppedLinks(),
	}
}

// stored is the store's records as lines "kind name effect <parent name> attrs", in
// stamp order, and its session rows' processes.
func stored(t *testing.T, store sessions.Store) (lines []string, rows []sessions.Session) {
	t.Helper()
	r := sessions.NewRecords(store)
	kinds, err := r.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		seq  uint64
		kind string
		r    sessions.Record
	}
	var all []rec
	names := map[sessions.SpanID]string{}
	for _, k := range kinds {
		for s, err := range r.All(k) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, rec{s.Stamp.Seq, k, s.Record})
			names[s.Record.SpanID] = s.Record.Name
		}
	}
	slices.SortFunc(all, func(a, b rec) int { return int(a.seq) - int(b.seq) })
	for _, a := range all {
		var attrs []string
		for _, kv := range a.r.Attributes {
			attrs = append(attrs, kv.Key+"="+fmt.Sprint(kv.Value))
		}
		lines = append(lines, strings.Join(strings.Fields(fmt.Sprintf("%s %s %v <%s> %s %s", a.kind, a.r.Name, a.r.Effect, names[a.r.ParentSpanID], strings.Join(attrs, ","), a.r.Status.Code)), " "))
	}
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, s)
	}
	return lines, rows
}

// build is the suite's program: a build with an implicit mark around a
// record, a cache hit, and a request span that encloses nothing.
func build(changed bool) func(trace.Tracer) {
	return func(tr trace.Tracer) {
		ctx, root := tr.Start(context.Background(), "build")
		_, req := tr.Start(ctx, "GET /health")
		req.End()
		cctx, phase := tr.Start(ctx, "compile", spanbridge.Mark()...)
		opts := spanbridge.Record("artifact", attribute.String("target", "app"), spanbridge.Full(attribute.String("log", "long")))
		if changed {
			opts = append(opts, trace.WithAttributes(spanbridge.Changed()))
		}
		_, a := tr.Start(cctx, "link app", opts...)
		a.End()
		_, hit := tr.Start(cctx, "lookup lib", spanbridge.Record("cache")...)
		hit.End()
		phase.End()
		_, bad := tr.Start(ctx, "odd", trace.WithAttributes(spanbridge.KindKey.String("sessions")))
		bad.End()
		root.End()
	}
}

// server is two requests, one that changed something and one that found
// its work done.
func server(tr trace.Tracer) {
	for _, changed := range []bool{true, false} {
		ctx, req := tr.Start(context.Background(), fmt.Sprint("GET /compile changed=", changed))
		opts := spanbridge.Record("artifact")
		if changed {
			opts = append(opts, trace.WithAttributes(spanbridge.Changed()))
		}
		_, a := tr.Start(ctx, fmt.Sprint("compile changed=", changed), opts...)
		a.End()
		req.End()
	}
}

func TestEntryPointsStoreTheSame(t *testing.T) {
	cases := []struct {
		name     string
		scenario func(trace.Tracer)
		opts     []setting
		want     []string
	}{
		{"warm run leaves nothing", build(false), nil, nil},
		{"changed run, enclosing marks", build(true), nil, []string{
			"marks build observed <>",
			"marks compile observed <build>",
			"artifact link app changed <compile> target=app",
			"cache lookup lib observed <compile>",
			"marks odd observed <build> records.invalid_kind=sessions",
		}},
		{"every mark, at level full", build(true), []setting{withMarks(exporter.MarksAll), withLevel(sessions.LevelFull)}, []string{
			"marks build observed <>",
			"marks GET /health observed <build>",
			"marks compile observed <build>",
			"artifact link app changed <compile> log=long,target=app",
			"cache lookup lib observed <compile>",
			"marks odd observed <build> records.invalid_kind=sessions",
		}},
		{"no implicit marks", build(true), []setting{withMarks(exporter.MarksNone)}, []string{
			"marks compile observed <>",
			"artifact link app changed <compile> target=app",
			"cache lookup lib observed <compile>",
			"marks odd observed <> records.invalid_kind=sessions",
		}},
		{"level off", build(true), []setting{withLevel(sessions.LevelOff)}, nil},
		{"keep by trace", server, []setting{withKeepBy(exporter.KeepByTrace)}, []string{
			"marks GET /compile changed=true observed <>",
			"artifact compile changed=true changed <GET /compile changed=true>",
		}},
		{"keep by session", server, nil, []string{
			"marks GET /compile changed=true observed <>",
			"artifact compile changed=true changed <GET /compile changed=true>",
			"marks GET /compile changed=false observed <>",
			"artifact compile changed=false observed <GET /compile changed=false>",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			captureErrors(t)
			talliedBy := map[string][]string{}
			for _, ep := range entryPoints {
				t.Run(ep.name, func(t *testing.T) {
					store := sessions.NewMemStore()
					ep.run(t, store, c.scenario, c.opts...)
					talliedBy[ep.name] = tallied(t, store)
					got, rows := stored(t, store)
					if !slices.Equal(got, c.want) {
						t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
					}
					if want := min(len(c.want), 1); len(rows) != want {
						t.Fatalf("%d session rows, want %d", len(rows), want)
					}
					if len(rows) == 1 && !hasAttr(rows[0].Resource, "service.name", "build") {
						t.Errorf("session row %+v does not carry the sender's Resource", rows[0])
					}
				})
			}
			// What each let go, tallied, is the same too (issue 46): the
			// Importer shut down at once decides the implicit marks
			// waiting for their grace (GET /health), as the
			// SpanProcessor does.
			if a, b := talliedBy["SpanProcessor"], talliedBy["Importer"]; !slices.Equal(a, b) {
				t.Errorf("tallied\n%s\nby the SpanProcessor,\n%s\nby the Importer", strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
		})
	}
}

// tallied is the store's tallies as lines "kind name count", sorted.
func tallied(t *testing.T, store sessions.Store) []string {
	t.Helper()
	r := sessions.NewRecords(store)
	var out []string
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		tl, _, err := tallies.Read(r, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tl.Entries {
			out = append(out, fmt.Sprintf("%s %s %d", e.Kind, e.Name, e.Count))
		}
	}
	slices.Sort(out)
	return out
}

func hasAttr(a sessions.Attrs, key, want string) bool {
	v, ok := a.Get(key)
	return ok && fmt.Sprint(v) == want
}

// Traces decided together are recorded in the order they arrived, through
// either entry point: forty requests of a server, each its own trace, the
// first changing something, all imported in one batch and decided at
// once under KeepBySession, are stored request by request, as they ended.
func TestTracesDecidedTogetherKeepTheirOrder(t *testing.T) {
	const requests = 40
	scenario := func(tr trace.Tracer) {
		for i := range requests {
			ctx, req := tr.Start(context.Background(), fmt.Sprint("GET /compile/", i))
			opts := spanbridge.Record("artifact")
			if i == 0 {
				opts = append(opts, trace.WithAttributes(spanbridge.Changed()))
			}
			_, a := tr.Start(ctx, fmt.Sprint("compile ", i), opts...)
			a.End()
			req.End()
		}
	}
	var want []string
	for i := range requests {
		effect := "observed"
		if i == 0 {
			effect = "changed"
		}
		want = append(want,
			fmt.Sprintf("marks GET /compile/%d observed <>", i),
			fmt.Sprintf("artifact compile %d %s <GET /compile/%d>", i, effect, i))
	}
	for _, ep := range entryPoints {
		t.Run(ep.name, func(t *testing.T) {
			store := sessions.NewMemStore()
			ep.run(t, store, scenario)
			if got, _ := stored(t, store); !slices.Equal(got, want) {
				t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// Every trace is counted once seen and once decided, through either entry
// point and under either keep-by rule: after Shutdown, kept + dropped +
// evicted = seen (issue 45: the Importer's TracesSeen read 0). Under
// KeepByTrace a server's every request is a trace seen; a small pending
// budget makes some evicted.
func TestEntryPointsCountEveryTrace(t *testing.T) {
	const requests = 30
	scenario := func(tr trace.Tracer) {
		for i := range requests {
			ctx, req := tr.Start(context.Background(), fmt.Sprint("GET /compile/", i))
			opts := spanbridge.Record("artifact", attribute.String("pad", strings.Repeat("x", 200)))
			if i%7 == 0 {
				opts = append(opts, trace.WithAttributes(spanbridge.Changed()))
			}
			_, a := tr.Start(ctx, fmt.Sprint("compile ", i), opts...)
			a.End()
			req.End()
		}
	}
	cases := []struct {
		name    string
		opts    []setting
		seen    int64 // the traces seen; -1: any, with some evicted
		evicted bool
	}{
		{"keep by trace", []setting{withKeepBy(exporter.KeepByTrace)}, requests, false},
		{"keep by trace, small budget", []setting{withKeepBy(exporter.KeepByTrace), withPendingBudget(2 << 10)}, requests, true},
		{"keep by session", []setting{withKeepBy(exporter.KeepBySession)}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, ep := range entryPoints {
				t.Run(ep.name, func(t *testing.T) {
					s := ep.run(t, sessions.NewMemStore(), scenario, c.opts...)
					if s.TracesKept+s.TracesDropped+s.TracesEvicted != s.TracesSeen || s.TracesSeen != c.seen ||
						(s.TracesEvicted > 0) != c.evicted {
						t.Fatalf("traces seen %d, kept %d, dropped %d, evicted %d: want kept + dropped + evicted = seen = %d, evicted: %v",
							s.TracesSeen, s.TracesKept, s.TracesDropped, s.TracesEvicted, c.seen, c.evicted)
					}
				})
			}
		})
	}
}
