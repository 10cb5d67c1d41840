package exporter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// captureErrors collects what reaches otel.Handle during the test.
func captureErrors(t *testing.T) *testsupport.Errors {
	e := &testsupport.Errors{}
	otel.SetErrorHandler(e)
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	return e
}

type provider struct {
	*sdktrace.TracerProvider
	exp *exporter.Exporter
	tr  trace.Tracer
}

func newProvider(t *testing.T, dir string, opts ...exporter.Option) *provider {
	t.Helper()
	exp, err := exporter.New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "build"))))
	return &provider{TracerProvider: tp, exp: exp, tr: tp.Tracer("test")}
}

func (p *provider) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return p.tr.Start(ctx, name, trace.WithAttributes(attrs...))
}

func (p *provider) do(name string, attrs ...attribute.KeyValue) {
	_, s := p.span(context.Background(), name, attrs...)
	s.End()
}

func (p *provider) shutdown(t *testing.T) {
	t.Helper()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func readAll(t *testing.T, dir string) (*sessions.Records, func()) {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return sessions.NewRecords(st), func() { st.Close() }
}

func names(t *testing.T, r *sessions.Records, kind string) []string {
	t.Helper()
	var out []string
	for rec, err := range r.All(kind) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Record.Name)
	}
	return out
}

func countSessions(t *testing.T, r *sessions.Records) []sessions.Session {
	t.Helper()
	var out []sessions.Session
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestWarmSessionCreatesNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := filepath.Join(t.TempDir(), "store")
	p := newProvider(t, dir)
	for i := range 1000 {
		p.do(fmt.Sprintf("lookup %d", i), spanbridge.Kind("autotune"), attribute.Bool("cached", true))
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.exp.Stats(); st.Held == 0 {
		t.Fatalf("stats after 1000 observed spans = %+v, want records held", st)
	}
	p.shutdown(t)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a session that only observed left %s behind (stat: %v)", dir, err)
	}
}

func TestColdSessionKeptAndReadAfterShutdown(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := filepath.Join(t.TempDir(), "store")
	p := newProvider(t, dir, exporter.WithLabel("models build"))
	ctx, load := p.span(context.Background(), "load")
	_, hit := p.span(ctx, "tune hit", spanbridge.Kind("autotune"), attribute.String("key", "a"))
	hit.End()
	load.End()
	_, c := p.span(context.Background(), "compile k1", spanbridge.Kind("compile"))
	c.SetAttributes(spanbridge.Changed())
	c.End()
	p.do("after", spanbridge.Kind("autotune"), attribute.String("key", "b"))
	p.shutdown(t)

	r, done := readAll(t, dir)
	defer done()
	ss := countSessions(t, r)
	if len(ss) != 1 || ss[0].Label != "models build" {
		t.Fatalf("sessions = %+v", ss)
	}
	if v, ok := ss[0].Resource.Get("service.name"); !ok || v.AsString() != "build" {
		t.Fatalf("resource = %+v, want service.name=build", ss[0].Resource)
	}
	if got := names(t, r, "autotune"); !slices.Equal(got, []string{"tune hit", "after"}) {
		t.Fatalf("autotune = %q", got)
	}
	if got := names(t, r, "marks"); !slices.Equal(got, []string{"load"}) {
		t.Fatalf("marks = %q", got)
	}
	if got := names(t, r, "compile"); !slices.Equal(got, []string{"compile k1"}) {
		t.Fatalf("compile = %q", got)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
}

func TestMarkContainsWhatIsStampedInside(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	ctx, phase := p.span(context.Background(), "tune")
	time.Sleep(time.Millisecond)
	for i := range 3 {
		_, s := p.span(ctx, fmt.Sprint("candidate ", i), spanbridge.Kind("autotune"), spanbridge.Changed())
		time.Sleep(200 * time.Microsecond)
		s.End()
	}
	time.Sleep(time.Millisecond)
	phase.End()
	p.shutdown(t)
	r := sessions.NewRecords(mem.Reopen())
	var mark sessions.Stamped[sessions.Record]
	for m := range r.All("marks") {
		mark = m
	}
	n := 0
	for rec, err := range r.All("autotune") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if rec.Stamp.Seq <= mark.Stamp.Seq {
			t.Errorf("inner seq %d not above the mark's %d", rec.Stamp.Seq, mark.Stamp.Seq)
		}
		if rec.Stamp.Offset < mark.Stamp.Offset || rec.Stamp.Offset+rec.Record.Wall > mark.Stamp.Offset+mark.Record.Wall {
			t.Errorf("inner [%v, +%v] not inside mark [%v, +%v]", rec.Stamp.Offset, rec.Record.Wall, mark.Stamp.Offset, mark.Record.Wall)
		}
		if rec.Record.ParentSpanID != mark.Record.SpanID {
			t.Errorf("inner parent %v, want the mark's span %v", rec.Record.ParentSpanID, mark.Record.SpanID)
		}
	}
	if n != 3 || mark.Record.Name != "tune" {
		t.Fatalf("%d inner records, mark %q", n, mark.Record.Name)
	}
}

func TestUniqueSeqsAcrossGoroutines(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	p.do("first change", spanbridge.Kind("compile"), spanbridge.Changed())
	var wg sync.WaitGroup
	const g, n = 8, 500
	for i := range g {
		wg.Go(func() {
			for j := range n {
				ctx, s := p.span(context.Background(), fmt.Sprint(i, "/", j), spanbridge.Kind("work"))
				_, inner := p.span(ctx, "inner", spanbridge.Kind("work"))
				inner.End()
				s.End()
			}
		})
	}
	wg.Wait()
	p.shutdown(t)
	seen := map[uint64]bool{}
	for rec, err := range sessions.NewRecords(mem.Reopen()).All("work") {
		if err != nil {
			t.Fatal(err)
		}
		if seen[rec.Stamp.Seq] {
			t.Fatalf("seq %d twice", rec.Stamp.Seq)
		}
		seen[rec.Stamp.Seq] = true
	}
	if len(seen) != 2*g*n {
		t.Fatalf("%d records, want %d", len(seen), 2*g*n)
	}
}

func TestKeepSessionsZeroBehavesAsOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	for i := range 3 {
		p := newProvider(t, dir, exporter.WithKeepSessions(0))
		p.do(fmt.Sprint("compile ", i), spanbridge.Kind("compile"), spanbridge.Changed())
		p.shutdown(t)
	}
	r, done := readAll(t, dir)
	defer done()
	if ss := countSessions(t, r); len(ss) != 1 {
		t.Fatalf("%d sessions, want 1", len(ss))
	}
	if got := names(t, r, "compile"); !slices.Equal(got, []string{"compile 2"}) {
		t.Fatalf("compile = %q, want only the last session's", got)
	}
}

func TestPruneTakesRecordsOfSessionPrunedWhileRunning(t *testing.T) {
	mem := sessions.NewMemStore()
	shared := nopClose{mem}
	long := newProvider(t, "", exporter.WithStore(shared))
	long.do("long 1", spanbridge.Kind("compile"), spanbridge.Changed())
	if err := long.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Another process keeps only its own session, pruning the long one.
	time.Sleep(time.Millisecond)
	short := newProvider(t, "", exporter.WithStore(shared), exporter.WithKeepSessions(1))
	short.do("short", spanbridge.Kind("compile"), spanbridge.Changed())
	short.shutdown(t)
	// The long-running one goes on writing under its pruned session.
	long.do("long 2", spanbridge.Kind("compile"), spanbridge.Changed())
	long.shutdown(t)
	r := sessions.NewRecords(mem)
	if got := names(t, r, "compile"); !slices.Equal(got, []string{"long 2", "short"}) {
		t.Fatalf("compile = %q, want the orphan and the short session's", got)
	}
	// The next prune takes the orphan: its session is below the newest
	// pruned one.
	third := newProvider(t, "", exporter.WithStore(shared), exporter.WithKeepSessions(1))
	third.do("third", spanbridge.Kind("compile"), spanbridge.Changed())
	third.shutdown(t)
	if got := names(t, r, "compile"); !slices.Equal(got, []string{"third"}) {
		t.Fatalf("after the next prune, compile = %q, want [third]", got)
	}
}

type nopClose struct{ sessions.Store }

func (nopClose) Close() error { return nil }

func TestLevelOffRecordsNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	p := newProvider(t, dir, exporter.WithLevel(sessions.LevelOff))
	for range 100 {
		p.do("compile", spanbridge.Kind("compile"), spanbridge.Changed())
	}
	p.shutdown(t)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("level off created %s", dir)
	}
	if st := p.exp.Stats(); st.Written != 0 || st.Held != 0 || st.SessionsKept != 0 {
		t.Fatalf("level off stats = %+v", st)
	}
}

func TestLevelChangeKeepsSession(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	p.do("a", spanbridge.Kind("compile"), spanbridge.Changed())
	p.exp.SetLevel(sessions.LevelOff)
	p.do("dropped", spanbridge.Kind("compile"), spanbridge.Changed())
	p.exp.SetLevel(sessions.LevelFull)
	p.do("b", spanbridge.Kind("compile"), spanbridge.Full(attribute.String("src", "x")))
	p.shutdown(t)
	r := sessions.NewRecords(mem.Reopen())
	if ss := countSessions(t, r); len(ss) != 1 {
		t.Fatalf("%d sessions, want 1: changing the level must not end it", len(ss))
	}
	var got []string
	for rec := range r.All("compile") {
		got = append(got, rec.Record.Name)
		if rec.Record.Name == "b" {
			if v, _ := rec.Record.Attributes.Get("src"); v.AsString() != "x" {
				t.Error("heavy attribute missing at level full")
			}
		}
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("compile = %q", got)
	}
}

func TestHeavyAttributesOnlyAtFull(t *testing.T) {
	for _, level := range []sessions.Level{sessions.LevelBasic, sessions.LevelFull} {
		mem := sessions.NewMemStore()
		p := newProvider(t, "", exporter.WithStore(mem), exporter.WithLevel(level))
		p.do("compile", spanbridge.Kind("compile"), spanbridge.Changed(), spanbridge.Full(attribute.String("source", "body")))
		p.shutdown(t)
		for rec := range sessions.NewRecords(mem.Reopen()).All("compile") {
			_, ok := rec.Record.Attributes.Get("source")
			if ok != (level == sessions.LevelFull) {
				t.Errorf("level %v: heavy attribute present = %v", level, ok)
			}
		}
	}
}

func TestLabelBeforeAndAfterKeep(t *testing.T) {
	for _, afterKeep := range []bool{false, true} {
		mem := sessions.NewMemStore()
		p := newProvider(t, "", exporter.WithStore(mem), exporter.WithLabel("start"))
		if afterKeep {
			p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			p.exp.Label("serve")
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			// Rewritten at once: readable before Shutdown.
			ss := countSessions(t, sessions.NewRecords(mem))
			if len(ss) != 1 || ss[0].Label != "serve" {
				t.Fatalf("label after keep, before shutdown = %+v", ss)
			}
		} else {
			p.do("observe", spanbridge.Kind("autotune"))
			p.exp.Label("serve")
			p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
		}
		p.shutdown(t)
		ss := countSessions(t, sessions.NewRecords(mem.Reopen()))
		if len(ss) != 1 || ss[0].Label != "serve" {
			t.Fatalf("afterKeep=%v: sessions = %+v, want label serve", afterKeep, ss)
		}
	}
}

func TestLabelFromResource(t *testing.T) {
	mem := sessions.NewMemStore()
	exp, _ := exporter.New("", exporter.WithStore(mem))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp),
		sdktrace.WithResource(resource.NewSchemaless(spanbridge.SessionLabel("from resource"))))
	_, s := tp.Tracer("t").Start(context.Background(), "c", trace.WithAttributes(spanbridge.Kind("compile"), spanbridge.Changed()))
	s.End()
	tp.Shutdown(context.Background())
	ss := countSessions(t, sessions.NewRecords(mem.Reopen()))
	if len(ss) != 1 || ss[0].Label != "from resource" {
		t.Fatalf("sessions = %+v", ss)
	}
}

func TestInvalidKindReportedOnceAndKept(t *testing.T) {
	e := captureErrors(t)
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	for range 5 {
		p.do("bad", spanbridge.Kind("sessions"), spanbridge.Changed())
	}
	p.shutdown(t)
	n := 0
	for _, err := range e.All() {
		if errors.Is(err, sessions.ErrInvalidKind) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("invalid kind reported %d times, want once: %v", n, e.All())
	}
	if got := names(t, sessions.NewRecords(mem.Reopen()), "marks"); len(got) != 5 {
		t.Fatalf("marks = %q, want the 5 spans kept as marks", got)
	}
	if p.exp.Stats().Problems != 5 {
		t.Fatalf("Problems = %d, want 5", p.exp.Stats().Problems)
	}
}

func TestForceFlushMakesDurable(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	defer p.shutdown(t)
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	for i := range 100 {
		p.do(fmt.Sprint(i), spanbridge.Kind("autotune"))
		if i%10 == 0 {
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := len(names(t, sessions.NewRecords(mem), "autotune")); got != i+1 {
				t.Fatalf("after ForceFlush, %d autotune records in the store, want %d", got, i+1)
			}
		}
	}
}

func TestForceFlushHonoursContext(t *testing.T) {
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()))
	defer p.shutdown(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.exp.ForceFlush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("ForceFlush(cancelled) = %v", err)
	}
}

func TestShutdownIsFinal(t *testing.T) {
	defer goleak.VerifyNone(t)
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	_, open := p.span(context.Background(), "still open", spanbridge.Kind("compile"), spanbridge.Changed())
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	if err := p.exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.exp.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
	if err := p.exp.ForceFlush(context.Background()); err != nil {
		t.Fatalf("ForceFlush after Shutdown = %v", err)
	}
	open.End() // ends after shutdown: ignored, no panic
	p.do("late", spanbridge.Kind("compile"), spanbridge.Changed())
	p.exp.Label("late")
	if got := names(t, sessions.NewRecords(mem.Reopen()), "compile"); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("compile = %q", got)
	}
	p.TracerProvider.Shutdown(context.Background())
}

func TestWriteErrorsGoToHandlerAndCaller(t *testing.T) {
	e := captureErrors(t)
	dir := filepath.Join(t.TempDir(), "file")
	p := newProvider(t, dir)
	// A file takes the path after New (which refuses one at once).
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	if err := p.ForceFlush(context.Background()); err == nil {
		t.Fatal("ForceFlush into a store path that is a file returned nil")
	}
	for range 10 {
		p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	}
	time.Sleep(50 * time.Millisecond)
	if err := p.exp.Shutdown(context.Background()); err == nil {
		t.Fatal("Shutdown with unwritable records returned nil")
	}
	if n := len(e.All()); n > 2 {
		t.Fatalf("%d errors reached otel.Handle for one failing cause, want at most 2: %v", n, e.All())
	}
}

func TestEnvironmentAndOptionsPrecedence(t *testing.T) {
	t.Setenv(exporter.EnvLevel, "off")
	t.Setenv(exporter.EnvLabel, "from env")
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	if p.exp.Level() != sessions.LevelOff {
		t.Fatalf("level = %v, want off from %s", p.exp.Level(), exporter.EnvLevel)
	}
	p.shutdown(t)
	p = newProvider(t, "", exporter.WithStore(mem), exporter.WithLevel(sessions.LevelFull))
	if p.exp.Level() != sessions.LevelFull {
		t.Fatalf("level = %v, want the option to win", p.exp.Level())
	}
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	ss := countSessions(t, sessions.NewRecords(mem.Reopen()))
	if len(ss) != 1 || ss[0].Label != "from env" {
		t.Fatalf("sessions = %+v, want label from env", ss)
	}
	e := captureErrors(t)
	t.Setenv(exporter.EnvLevel, "loud")
	t.Setenv(exporter.EnvKeepSessions, "many")
	p = newProvider(t, "", exporter.WithStore(sessions.NewMemStore()))
	p.shutdown(t)
	if p.exp.Level() != exporter.DefaultLevel || len(e.All()) != 2 {
		t.Fatalf("bad env: level %v, errors %v; want default level and 2 reports", p.exp.Level(), e.All())
	}
}

// A negative (or zero) count of sessions to keep is reported and ignored:
// taken as 1, it would delete every other session of the store.
func TestNegativeKeepSessionsFromEnvironmentIsIgnored(t *testing.T) {
	mem := sessions.NewMemStore()
	for i := range 3 {
		p := newProvider(t, "", exporter.WithStore(mem), exporter.WithClock(func() time.Time { return time.Unix(int64(i+1), 0) }))
		p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
		p.shutdown(t)
		mem = mem.Reopen()
	}
	e := captureErrors(t)
	t.Setenv(exporter.EnvKeepSessions, "-5")
	p := newProvider(t, "", exporter.WithStore(mem), exporter.WithClock(func() time.Time { return time.Unix(10, 0) }))
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	if ss := countSessions(t, sessions.NewRecords(mem.Reopen())); len(ss) != 4 {
		t.Fatalf("%d sessions left, want all 4: a negative keep count must prune nothing", len(ss))
	}
	if len(e.All()) != 1 || !strings.Contains(e.All()[0].Error(), exporter.EnvKeepSessions) {
		t.Fatalf("reports = %v, want one naming %s", e.All(), exporter.EnvKeepSessions)
	}
}

func TestDefaultDirFromEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "env-store")
	t.Setenv(exporter.EnvDir, dir)
	p := newProvider(t, "")
	if p.exp.Dir() != dir {
		t.Fatalf("Dir = %q, want %q", p.exp.Dir(), dir)
	}
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	r, done := readAll(t, dir)
	defer done()
	if got := names(t, r, "compile"); len(got) != 1 {
		t.Fatalf("compile = %q", got)
	}
}

func TestNothingOnStdout(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = wr
	var out []byte
	done := make(chan struct{})
	go func() { out, _ = io.ReadAll(rd); close(done) }()
	func() {
		defer func() { os.Stdout = old }()
		dir := filepath.Join(t.TempDir(), "store")
		p := newProvider(t, dir)
		p.do("bad", spanbridge.Kind(""))
		p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
		p.shutdown(t)
	}()
	wr.Close()
	<-done
	if len(out) > 0 {
		t.Fatalf("the exporter printed to stdout: %q", strings.TrimSpace(string(out)))
	}
}

func TestBadgerOwnSpansAreNotRecorded(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	_, s := p.Tracer("").Start(context.Background(), "Badger.Compaction", trace.WithAttributes(spanbridge.Changed()))
	s.End()
	p.do("compile", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	r := sessions.NewRecords(mem.Reopen())
	if got := names(t, r, "marks"); len(got) != 0 {
		t.Fatalf("marks = %q: Badger's own compaction span was recorded", got)
	}
}

// A session starts at its first span's start time, here an explicit one
// a millisecond before now: that span's offset is 0, not clamped from a
// negative one, and the next span's offset is exactly its start minus the
// first's, so a span that ended before the next began never overlaps it.
func TestSessionStartsAtItsFirstSpan(t *testing.T) {
	mem := sessions.NewMemStore()
	exp, err := exporter.New("", exporter.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp), sdktrace.WithSpanProcessor(spans))
	tr := tp.Tracer("test")
	_, load := tr.Start(context.Background(), "load", trace.WithTimestamp(time.Now().Add(-time.Millisecond)),
		trace.WithAttributes(spanbridge.Kind("phase")))
	load.End()
	_, tune := tr.Start(context.Background(), "tune", trace.WithAttributes(spanbridge.Kind("phase"), spanbridge.Changed()))
	tune.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended := spans.Ended()
	first, second := ended[0].StartTime(), ended[1].StartTime()

	r := sessions.NewRecords(mem.Reopen())
	ss := countSessions(t, r)
	lag := first.UnixNano() - int64(ss[0].ID)
	if len(ss) != 1 || lag < 0 || lag >= 1<<recorder.IDRandomBits || ss[0].StartedUnixMs != ss[0].Started().UnixMilli() {
		t.Fatalf("sessions = %+v, want an id at most 2^%d ns before the first span's start %d", ss, recorder.IDRandomBits, first.UnixNano())
	}
	var got []sessions.Stamped[sessions.Record]
	for rec, err := range r.All("phase") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec)
	}
	if len(got) != 2 {
		t.Fatalf("%d records, want 2", len(got))
	}
	if !ss[0].Started().Add(got[0].Stamp.Offset).Equal(first) {
		t.Errorf("first span's offset = %v: the session's start plus it is not the span's start", got[0].Stamp.Offset)
	}
	if want := second.Sub(first) + time.Duration(lag); got[1].Stamp.Offset != want {
		t.Errorf("second span's offset = %v, want its start minus the first's, %v", got[1].Stamp.Offset, want)
	}
	if end := got[0].Stamp.Offset + got[0].Record.Wall; got[1].Stamp.Offset < end {
		t.Errorf("the second span (at %v) overlaps the first, which ended at %v", got[1].Stamp.Offset, end)
	}
}

// A span that starts earlier than its session's first span (a later span
// with an explicit older timestamp) keeps its true place: its offset may
// be negative, never clamped.
func TestSpanStartedBeforeTheSessionHasNegativeOffset(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	t0 := time.Now()
	_, a := p.tr.Start(context.Background(), "a", trace.WithTimestamp(t0), trace.WithAttributes(spanbridge.Kind("phase")))
	a.End(trace.WithTimestamp(t0.Add(time.Millisecond)))
	_, b := p.tr.Start(context.Background(), "b", trace.WithTimestamp(t0.Add(-5*time.Millisecond)),
		trace.WithAttributes(spanbridge.Kind("phase"), spanbridge.Changed()))
	b.End(trace.WithTimestamp(t0.Add(-4 * time.Millisecond)))
	p.shutdown(t)
	var starts []time.Time
	r := sessions.NewRecords(mem.Reopen())
	started := countSessions(t, r)[0].Started()
	for rec, err := range r.All("phase") {
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, started.Add(rec.Stamp.Offset))
	}
	if len(starts) != 2 || !starts[0].Equal(t0) || !starts[1].Equal(t0.Add(-5*time.Millisecond)) {
		t.Fatalf("session start + offsets = %v, want [%v %v]", starts, t0, t0.Add(-5*time.Millisecond))
	}
}

// Two exporters on one provider see the same first span: their sessions
// start at the same instant, and still get two ids.
func TestSessionsStartingTogetherGetDistinctIDs(t *testing.T) {
	mem := sessions.NewMemStore()
	shared := nopClose{mem}
	opts := []sdktrace.TracerProviderOption{}
	for range 2 {
		exp, err := exporter.New("", exporter.WithStore(shared))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, sdktrace.WithSpanProcessor(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	_, s := tp.Tracer("test").Start(context.Background(), "compile", trace.WithAttributes(spanbridge.Kind("compile"), spanbridge.Changed()))
	s.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ss := countSessions(t, sessions.NewRecords(mem))
	if len(ss) != 2 || ss[0].ID == ss[1].ID || ss[1].ID-ss[0].ID >= 1<<recorder.IDRandomBits {
		t.Fatalf("sessions = %+v, want two, with ids within 2^%d ns", ss, recorder.IDRandomBits)
	}
	if n := len(names(t, sessions.NewRecords(mem), "compile")); n != 2 {
		t.Fatalf("%d compile records, want one per session", n)
	}
}
