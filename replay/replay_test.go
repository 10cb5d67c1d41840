package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/ground/version"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// record runs a small instrumented build through the exporter into a
// memory store, with every timestamp given so the replay can be compared
// exactly, and returns the store and the spans the SDK ended.
func record(t *testing.T) (*sessions.MemStore, []sdktrace.ReadOnlySpan) {
	t.Helper()
	mem := sessions.NewMemStore()
	rec, err := exporter.New("", exporter.WithStore(mem), exporter.WithLabel("models build qwen3-8b"),
		exporter.WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSpanProcessor(spans),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "tuner"),
			attribute.String("service.version", "1.2.3"),
		)),
	)
	tr := tp.Tracer("example.com/tuner", trace.WithInstrumentationVersion("v0.1.0"))
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	ctx, build := tr.Start(context.Background(), "build", trace.WithTimestamp(at(0)))
	_, tune := tr.Start(ctx, "tune matmul", append(spanbridge.Record("autotune",
		attribute.String("autotune.key", "matmul 1024"),
		attribute.Int("tried", 2),
		attribute.Float64("speedup", 1.5),
		attribute.Bool("cached", false),
		attribute.StringSlice("candidates", []string{"tiled", "simd"}),
		attribute.Int64Slice("costs", []int64{3, 5}),
	), trace.WithTimestamp(at(1)), trace.WithSpanKind(trace.SpanKindServer))...)
	tune.AddEvent("candidate done", trace.WithTimestamp(at(3)), trace.WithAttributes(attribute.String("candidate", "tiled")))
	tune.SetStatus(codes.Error, "simd failed")
	tune.SetAttributes(spanbridge.Changed())
	tune.End(trace.WithTimestamp(at(6)))
	_, compile := tr.Start(ctx, "compile matmul", append(spanbridge.Record("compile",
		attribute.String("kernel", "matmul_tiled")), trace.WithTimestamp(at(7)))...)
	compile.SetStatus(codes.Ok, "")
	compile.End(trace.WithTimestamp(at(10)))
	build.End(trace.WithTimestamp(at(12)))

	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return mem.Reopen(), spans.Ended()
}

func replayAll(t *testing.T, mem *sessions.MemStore, o replay.Options) ([]tracetest.SpanStub, replay.Progress) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	p, err := replay.Replay(context.Background(), sessions.NewRecords(mem), exp, o)
	if err != nil {
		t.Fatal(err)
	}
	// The records' spans: a kept session's tally follows them, a span of
	// its own (TestReplaySendsTallies).
	var got tracetest.SpanStubs
	tallies := 0
	for _, s := range exp.GetSpans() {
		if s.Name == spanbridge.TallyName {
			tallies++
			continue
		}
		got = append(got, s)
	}
	if tallies != p.Tallies {
		t.Errorf("%d tallies' spans sent, progress says %d", tallies, p.Tallies)
	}
	return got, p
}

func TestReplayGivesBackTheSpans(t *testing.T) {
	mem, orig := record(t)
	got, p := replayAll(t, mem, replay.Options{})
	if p.Sessions != 1 || p.Total != 1 || p.Spans != 3 || len(got) != 3 {
		t.Fatalf("progress %+v, %d spans; want 1 session, 3 spans", p, len(got))
	}
	// Replayed in stamp order: the build (stamped first), then its children.
	if names := []string{got[0].Name, got[1].Name, got[2].Name}; !slices.Equal(names, []string{"build", "tune matmul", "compile matmul"}) {
		t.Fatalf("order %q", names)
	}
	kinds := map[string]string{"build": "marks", "tune matmul": "autotune", "compile matmul": "compile"}
	for _, o := range orig {
		g := find(t, got, o.SpanContext().SpanID())
		if g.SpanContext.TraceID() != o.SpanContext().TraceID() || g.Parent.SpanID() != o.Parent().SpanID() {
			t.Errorf("%s: ids %v/%v, want %v/%v", o.Name(), g.SpanContext.TraceID(), g.Parent.SpanID(), o.SpanContext().TraceID(), o.Parent().SpanID())
		}
		if g.Name != o.Name() || !g.StartTime.Equal(o.StartTime()) || !g.EndTime.Equal(o.EndTime()) {
			t.Errorf("%s: [%v, %v], want %q [%v, %v]", g.Name, g.StartTime, g.EndTime, o.Name(), o.StartTime(), o.EndTime())
		}
		if g.Status != o.Status() || g.InstrumentationScope != o.InstrumentationScope() || g.SpanKind != o.SpanKind() {
			t.Errorf("%s: status %v scope %v kind %v, want %v %v %v", g.Name, g.Status, g.InstrumentationScope, g.SpanKind, o.Status(), o.InstrumentationScope(), o.SpanKind())
		}
		// The attributes come back with the kind (marks too) and the
		// seq, records.effect only when changed, and the inputs, the keys
		// the span started with, where the record knows them.
		want := attribute.NewSet(append(slices.DeleteFunc(slices.Clone(o.Attributes()), func(kv attribute.KeyValue) bool {
			return kv.Key == spanbridge.EffectKey
		}), append(map[string][]attribute.KeyValue{
			"tune matmul":    {spanbridge.Changed(), spanbridge.InputsKey.StringSlice([]string{"autotune.key", "tried", "speedup", "cached", "candidates", "costs"})},
			"compile matmul": {spanbridge.InputsKey.StringSlice([]string{"kernel"})},
		}[o.Name()], spanbridge.Kind(kinds[o.Name()]), spanbridge.SeqKey.Int64(int64(map[string]int{"build": 0, "tune matmul": 1, "compile matmul": 2}[o.Name()])))...)...)
		if have := attribute.NewSet(g.Attributes...); !have.Equals(&want) {
			t.Errorf("%s: attributes\n%v\nwant\n%v", g.Name, have.Encoded(attribute.DefaultEncoder()), want.Encoded(attribute.DefaultEncoder()))
		}
		if len(g.Events) != len(o.Events()) {
			t.Fatalf("%s: %d events, want %d", g.Name, len(g.Events), len(o.Events()))
		}
		for j, e := range o.Events() {
			ge := g.Events[j]
			have, want := attribute.NewSet(ge.Attributes...), attribute.NewSet(e.Attributes...)
			if ge.Name != e.Name || !ge.Time.Equal(e.Time) || !have.Equals(&want) {
				t.Errorf("%s: event %+v, want %+v", g.Name, ge, e)
			}
		}
	}

	res := got[0].Resource
	for _, s := range got {
		if s.Resource != res {
			t.Fatal("one session's spans have different resources")
		}
	}
	want := map[attribute.Key]attribute.Value{
		"service.name":                    attribute.StringValue("tuner"),
		"service.version":                 attribute.StringValue("1.2.3"),
		spanbridge.SessionIDKey:           attribute.StringValue(onlySession(t, mem).String()),
		spanbridge.SessionLabelKey:        attribute.StringValue("models build qwen3-8b"),
		"process.pid":                     attribute.IntValue(os.Getpid()),
		spanbridge.SessionVersionKey:      attribute.StringValue(version.Module()),
		attribute.Key("telemetry.sdk.go"): {}, // absent: the test provider's Resource is schemaless
	}
	for k, v := range want {
		got, ok := res.Set().Value(k)
		if v.Type() == attribute.EMPTY {
			if ok {
				t.Errorf("resource has %s", k)
			}
			continue
		}
		if !ok || got != v {
			t.Errorf("resource %s = %v (%v), want %v", k, got.Emit(), ok, v.Emit())
		}
	}
	if _, ok := res.Set().Value("os.type"); !ok {
		t.Error("resource has no os.type")
	}
}

func find(t *testing.T, spans []tracetest.SpanStub, id trace.SpanID) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.SpanContext.SpanID() == id {
			return s
		}
	}
	t.Fatalf("no replayed span with id %v", id)
	return tracetest.SpanStub{}
}

func TestReplayIsDeterministic(t *testing.T) {
	mem, _ := record(t)
	a, _ := replayAll(t, mem, replay.Options{})
	b, _ := replayAll(t, mem, replay.Options{})
	if len(a) != len(b) {
		t.Fatalf("%d then %d spans", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || !x.SpanContext.Equal(y.SpanContext) || !x.Parent.Equal(y.Parent) ||
			!x.StartTime.Equal(y.StartTime) || !x.EndTime.Equal(y.EndTime) ||
			!x.Resource.Equal(y.Resource) || !slices.Equal(x.Attributes, y.Attributes) {
			t.Errorf("span %d differs between two replays:\n%+v\n%+v", i, x, y)
		}
	}
}

// writeSessions records sessions straight through a Recorder, as a writer
// without OpenTelemetry would: no trace or span ids. Session i starts at
// t0 + i hours and holds n[i] marks (the first one changed).
func writeSessions(t *testing.T, mem *sessions.MemStore, n ...int) []sessions.SessionID {
	t.Helper()
	var ids []sessions.SessionID
	for i, count := range n {
		start := t0.Add(time.Duration(i) * time.Hour)
		rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, Label: fmt.Sprint("session ", i)},
			func() (sessions.Store, error) { return mem, nil }, func() time.Time { return start })
		for j := range count {
			st, _ := rec.Stamp(start.Add(time.Duration(j) * time.Millisecond))
			effect := sessions.Observed
			if j == 0 {
				effect = sessions.Changed
			}
			body := sessions.Record{Name: fmt.Sprint("step ", j), Wall: time.Millisecond}
			if err := rec.Record(sessions.MarksKind, effect, st, body); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, _ := rec.Session()
		ids = append(ids, s.ID)
	}
	return ids
}

func TestRecordsWithoutIDsGetStableOnes(t *testing.T) {
	mem := sessions.NewMemStore()
	ids := writeSessions(t, mem, 3)
	got, _ := replayAll(t, mem, replay.Options{})
	if len(got) != 3 {
		t.Fatalf("%d spans", len(got))
	}
	for i, s := range got {
		sc := s.SpanContext
		if !sc.IsValid() || s.Parent.IsValid() {
			t.Fatalf("span %d: context %v parent %v; want a valid root", i, sc, s.Parent)
		}
		if want := (trace.SpanID{7: byte(i + 1)}); sc.SpanID() != want {
			t.Errorf("span %d: id %v, want %v (seq + 1)", i, sc.SpanID(), want)
		}
		if sc.TraceID().String() != fmt.Sprintf("%016x", uint64(ids[0]))+strings.Repeat("0", 16) {
			t.Errorf("span %d: trace %v, want the session id", i, sc.TraceID())
		}
		if !s.StartTime.Equal(t0.Add(time.Duration(i)*time.Millisecond)) || s.EndTime.Sub(s.StartTime) != time.Millisecond {
			t.Errorf("span %d: [%v, %v]", i, s.StartTime, s.EndTime)
		}
	}
	// No service.name was recorded: the OpenTelemetry default stands in.
	if v, _ := got[0].Resource.Set().Value("service.name"); v.AsString() != "unknown_service" {
		t.Errorf("service.name = %q", v.Emit())
	}
}

func TestReplayChosenSessions(t *testing.T) {
	mem := sessions.NewMemStore()
	ids := writeSessions(t, mem, 2, 3, 4)
	got, p := replayAll(t, mem, replay.Options{Sessions: []sessions.SessionID{ids[2], ids[0], ids[2]}, Service: "fleet"})
	if p.Sessions != 2 || p.Total != 2 || len(got) != 6 {
		t.Fatalf("progress %+v, %d spans; want 2 sessions, 6 spans", p, len(got))
	}
	for _, s := range got {
		v, _ := s.Resource.Set().Value("service.name")
		id, _ := s.Resource.Set().Value(spanbridge.SessionIDKey)
		if v.AsString() != "fleet" || (id.AsString() != ids[0].String() && id.AsString() != ids[2].String()) {
			t.Fatalf("span %s: service %q session %s", s.Name, v.Emit(), id.Emit())
		}
	}

	exp := tracetest.NewInMemoryExporter()
	_, err := replay.Replay(context.Background(), sessions.NewRecords(mem), exp, replay.Options{Sessions: []sessions.SessionID{42}})
	if !errors.Is(err, replay.ErrNoSession) || len(exp.GetSpans()) != 0 {
		t.Fatalf("unknown session: %v, %d spans", err, len(exp.GetSpans()))
	}
}

func TestOrphanRecordsReplayUnderTheirSessionID(t *testing.T) {
	mem := sessions.NewMemStore()
	ids := writeSessions(t, mem, 2)
	// Another process pruned the row while the writer ran on.
	if _, err := mem.DeleteRange(testsupport.SessionKey(ids[0]), append(testsupport.SessionKey(ids[0]), 0), nil); err != nil {
		t.Fatal(err)
	}
	got, p := replayAll(t, mem, replay.Options{})
	if len(got) != 2 || p.Sessions != 1 || p.Total != 0 {
		t.Fatalf("progress %+v, %d spans", p, len(got))
	}
	if v, _ := got[0].Resource.Set().Value(spanbridge.SessionIDKey); v.AsString() != ids[0].String() {
		t.Fatalf("session id %q", v.Emit())
	}
}

// countingExporter records the size of every batch and fails after a
// number of them.
type countingExporter struct {
	batches []int
	failAt  int
}

func (c *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(c.batches) == c.failAt {
		return errors.New("backend unavailable")
	}
	c.batches = append(c.batches, len(spans))
	return nil
}

func (c *countingExporter) Shutdown(context.Context) error { return nil }

func TestBatches(t *testing.T) {
	mem := sessions.NewMemStore()
	writeSessions(t, mem, 700, 600)
	exp := &countingExporter{failAt: -1}
	var seen []replay.Progress
	p, err := replay.Replay(context.Background(), sessions.NewRecords(mem), exp, replay.Options{
		Progress: func(p replay.Progress) { seen = append(seen, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// 1300 records, and each session's tally after its records.
	if !slices.Equal(exp.batches, []int{512, 512, 278}) || p.Spans != 1300 || p.Tallies != 2 || p.Sessions != 2 {
		t.Fatalf("batches %v, progress %+v", exp.batches, p)
	}
	if len(seen) != 3 || seen[0].Spans != 512 || seen[0].Sessions != 1 || seen[2] != p {
		t.Fatalf("progress reports %+v", seen)
	}

	// An export error ends the replay, saying how much went before it.
	exp = &countingExporter{failAt: 1}
	p, err = replay.Replay(context.Background(), sessions.NewRecords(mem), exp, replay.Options{})
	if err == nil || p.Spans != 512 {
		t.Fatalf("failing backend: %v, progress %+v", err, p)
	}
}

func TestBatchesStayUnderTheByteLimit(t *testing.T) {
	mem := sessions.NewMemStore()
	rec := recorder.New(recorder.Config{Level: sessions.LevelFull},
		func() (sessions.Store, error) { return mem, nil }, func() time.Time { return t0 })
	heavy := strings.Repeat("x", 300<<10) // a kernel's source, say
	for range 10 {
		st, _ := rec.Stamp(time.Time{})
		body := sessions.Record{Name: "compile", Attributes: sessions.Attrs{{Key: "source", Value: sessions.StringValue(heavy)}}}
		if err := rec.Record("compile", sessions.Changed, st, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	exp := &countingExporter{failAt: -1}
	if _, err := replay.Replay(context.Background(), sessions.NewRecords(mem), exp, replay.Options{}); err != nil {
		t.Fatal(err)
	}
	// 300 KiB each: three fit under 1 MiB, a fourth would not; the
	// session's tally, small, goes with the last.
	if !slices.Equal(exp.batches, []int{3, 3, 3, 2}) {
		t.Fatalf("batches %v", exp.batches)
	}
}

func TestReplayStopsWithItsContext(t *testing.T) {
	mem := sessions.NewMemStore()
	writeSessions(t, mem, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	exp := tracetest.NewInMemoryExporter()
	if _, err := replay.Replay(ctx, sessions.NewRecords(mem), exp, replay.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// onlySession returns the id of the one session in mem.
func onlySession(t *testing.T, mem *sessions.MemStore) sessions.SessionID {
	t.Helper()
	var ids []sessions.SessionID
	for s, err := range sessions.NewRecords(mem).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 1 {
		t.Fatalf("%d sessions, want 1", len(ids))
	}
	return ids[0]
}

// Skip is asked about each record in stamp order, and what it returns
// true for is not sent; a session all skipped is not counted.
func TestReplaySkip(t *testing.T) {
	mem, _ := record(t)
	var asked []uint64
	got, p := replayAll(t, mem, replay.Options{Skip: func(st sessions.Stamp) bool {
		asked = append(asked, st.Seq)
		return st.Seq != 1
	}})
	if !slices.Equal(asked, []uint64{0, 1, 2}) || len(got) != 1 || got[0].Name != "tune matmul" || p.Spans != 1 || p.Sessions != 1 {
		t.Fatalf("asked %v, sent %d spans (%+v); want seqs 0-2 asked and tune matmul alone sent", asked, len(got), p)
	}
	if got, p := replayAll(t, mem, replay.Options{Skip: func(sessions.Stamp) bool { return true }}); len(got) != 0 || p.Sessions != 0 {
		t.Fatalf("all skipped: %d spans, %d sessions; want none", len(got), p.Sessions)
	}
}
