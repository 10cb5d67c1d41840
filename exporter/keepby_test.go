package exporter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The server of issue 23: otelhttp instruments every request; /lookup
// makes a lookup record, and on a cache miss a compile record that
// changed the cache inside it. 4 clients send 100 requests each over 10
// keys: 10 misses, 390 hits.
const (
	lookupClients  = 4
	lookupRequests = 100
	lookupKeys     = 10
)

// lookupServer runs the scenario against exp and returns the trace ids of
// the requests that missed.
func lookupServer(t *testing.T, exp *exporter.Exporter, warm bool) map[sessions.TraceID]bool {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tracer := tp.Tracer("example.com/lookup")
	var mu sync.Mutex
	cache := map[string]bool{}
	if warm {
		for k := range lookupKeys {
			cache[fmt.Sprintf("k%d", k)] = true
		}
	}
	misses := map[sessions.TraceID]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("/lookup", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		ctx, lookup := tracer.Start(r.Context(), "lookup "+key, spanbridge.Record("lookup", attribute.String("key", key))...)
		defer lookup.End()
		mu.Lock()
		hit := cache[key]
		cache[key] = true
		if !hit {
			misses[sessions.TraceID(trace.SpanContextFromContext(ctx).TraceID())] = true
		}
		mu.Unlock()
		if !hit {
			_, compile := tracer.Start(ctx, "compile "+key, spanbridge.Record("compile", attribute.String("key", key), spanbridge.Changed())...)
			time.Sleep(time.Millisecond)
			compile.End()
		}
		io.WriteString(w, key)
	})
	srv := httptest.NewServer(otelhttp.NewHandler(mux, "serve", otelhttp.WithTracerProvider(tp)))
	defer srv.Close()
	testsupport.GetConcurrently(t, lookupClients, lookupRequests, func(c, i int) string {
		return fmt.Sprintf("%s/lookup?key=k%d", srv.URL, (c*lookupRequests+i)%lookupKeys)
	})
	if err := exp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return misses
}

// storedByKind counts the records in dir's store by kind, and returns
// the traces they belong to.
func storedByKind(t *testing.T, dir string) (map[string]int, map[sessions.TraceID]bool) {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counts, traces := map[string]int{}, map[sessions.TraceID]bool{}
	for _, rec := range testsupport.AllRecords(t, st) {
		counts[rec.Kind]++
		traces[rec.Record.TraceID] = true
	}
	return counts, traces
}

// Stopping a server right after its load decides every trace it still
// held: the 390 hits, still inside their grace, are dropped, and Stats
// says so (issue 33: TracesKept 10, TracesDropped 0, until 3s later).
func TestKeepByTraceShutdownDecidesEveryTrace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	exp, err := exporter.New(dir, exporter.WithKeepBy(exporter.KeepByTrace))
	if err != nil {
		t.Fatal(err)
	}
	lookupServer(t, exp, false)
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	hits := int64(lookupClients*lookupRequests - lookupKeys)
	s := exp.Stats()
	if s.TracesKept != lookupKeys || s.TracesDropped != hits || s.TracesEvicted != 0 || s.Held != 0 ||
		s.TracesSeen != lookupClients*lookupRequests {
		t.Fatalf("stats after Shutdown %+v: want %d traces seen, %d kept, %d dropped, none evicted or held",
			s, lookupClients*lookupRequests, lookupKeys, hits)
	}
	if counts, _ := storedByKind(t, dir); counts["compile"] != lookupKeys || counts["lookup"] != lookupKeys {
		t.Fatalf("stored %v, want the %d misses' records", counts, lookupKeys)
	}
}

func TestKeepByTraceServerStoresOnlyTheMisses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	exp, err := exporter.New(dir, exporter.WithKeepBy(exporter.KeepByTrace))
	if err != nil {
		t.Fatal(err)
	}
	misses := lookupServer(t, exp, false)
	if len(misses) != lookupKeys {
		t.Fatalf("%d misses, want %d", len(misses), lookupKeys)
	}
	// The hits' traces are dropped once their grace has passed.
	hits := int64(lookupClients*lookupRequests - lookupKeys)
	waited := time.Now()
	defer func() { t.Logf("hits dropped %v after the last request", time.Since(waited)) }()
	deadline := time.Now().Add(exporter.TraceGrace + 5*time.Second)
	for exp.Stats().TracesDropped < hits && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s := exp.Stats()
	if s.TracesKept != lookupKeys || s.TracesDropped != hits || s.TracesEvicted != 0 || s.Held != 0 {
		t.Fatalf("stats %+v: want %d traces kept, %d dropped, none evicted or held", s, lookupKeys, hits)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	counts, traces := storedByKind(t, dir)
	want := map[string]int{"compile": lookupKeys, "lookup": lookupKeys, sessions.MarksKind: lookupKeys}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("stored %v, want %v: each miss's request span, lookup and compile, and nothing of the hits", counts, want)
	}
	for tr := range traces {
		if !misses[tr] {
			t.Errorf("a record of trace %x, which missed nothing, was stored", tr)
		}
	}
	if len(traces) != lookupKeys {
		t.Errorf("records of %d traces stored, want the %d misses'", len(traces), lookupKeys)
	}
}

func TestKeepBySessionServerStoresEveryRequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	exp, err := exporter.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	lookupServer(t, exp, false)
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	counts, _ := storedByKind(t, dir)
	n := lookupClients * lookupRequests
	want := map[string]int{"compile": lookupKeys, "lookup": n, sessions.MarksKind: n}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("stored %v, want %v: under the session rule every request is kept", counts, want)
	}
	if s := exp.Stats(); s.TracesKept+s.TracesDropped+s.TracesEvicted != 0 {
		t.Fatalf("stats %+v: the session rule counts no traces", s)
	}
}

func TestWarmServerWritesNothingUnderEitherRule(t *testing.T) {
	for _, by := range []exporter.KeepBy{exporter.KeepBySession, exporter.KeepByTrace} {
		t.Run(by.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			exp, err := exporter.New(dir, exporter.WithKeepBy(by))
			if err != nil {
				t.Fatal(err)
			}
			if misses := lookupServer(t, exp, true); len(misses) != 0 {
				t.Fatalf("%d misses on a warm cache", len(misses))
			}
			if err := exp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a warm server made its store directory (%v)", err)
			}
			if s := exp.Stats(); s.StoreOpens != 0 || s.SessionsKept != 0 || s.Written != 0 {
				t.Fatalf("stats %+v: a warm server keeps nothing and opens nothing", s)
			}
		})
	}
}

func TestKeepByFromTheEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  string
		opts []exporter.Option
		want string
	}{
		{"trace", nil, "trace"},
		{"TRACE", nil, "trace"},
		{" Session ", nil, "session"},
		{"request", nil, "session"}, // reported and ignored
		{"trace", []exporter.Option{exporter.WithKeepBy(exporter.KeepBySession)}, "session"}, // the option wins
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(exporter.EnvKeepBy, c.env)
			mem := sessions.NewMemStore()
			exp, err := exporter.New("", append(c.opts, exporter.WithStore(mem))...)
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
			tr := tp.Tracer("t")
			// Two traces, one of which changed: by session both are kept,
			// by trace one.
			_, a := tr.Start(context.Background(), "a", spanbridge.Record("step")...)
			a.End()
			_, b := tr.Start(context.Background(), "b", spanbridge.Record("step", spanbridge.Changed())...)
			b.End()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := "session"
			if exp.Stats().Written == 1 {
				got = "trace"
			}
			if got != c.want {
				t.Fatalf("%s=%q kept by %s, want %s", exporter.EnvKeepBy, c.env, got, c.want)
			}
		})
	}
}

// A request span under a client's propagated context (a remote parent) is
// its trace's local root; a child that ends after it, within the grace,
// is decided with it, and one that ends after the decision follows it.
// Under MarksNone the request span is no record, but its end still starts
// the grace.
func TestKeepByTraceRemoteRootsAndLateChildren(t *testing.T) {
	mem := sessions.NewMemStore()
	exp, err := exporter.New("", exporter.WithStore(mem), exporter.WithKeepBy(exporter.KeepByTrace), exporter.WithMarks(exporter.MarksNone))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("t")
	request := func(id byte) (context.Context, trace.Span) {
		remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0: id}, SpanID: trace.SpanID{0: id}, TraceFlags: trace.FlagsSampled, Remote: true})
		return tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "serve", trace.WithSpanKind(trace.SpanKindServer))
	}
	step := func(ctx context.Context, name string, attrs ...attribute.KeyValue) {
		_, s := tr.Start(ctx, name, spanbridge.Record("step", attrs...)...)
		s.End()
	}

	// Trace 1 changes something after its request span has ended.
	ctx1, req1 := request(1)
	step(ctx1, "lookup 1")
	req1.End()
	// Trace 2 changes nothing.
	ctx2, req2 := request(2)
	step(ctx2, "lookup 2")
	req2.End()
	step(ctx1, "cache write 1", spanbridge.Changed()) // within the grace
	if err := exp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(exporter.TraceGrace + 5*time.Second); exp.Stats().TracesDropped == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	step(ctx1, "late 1") // after trace 1 was kept: written
	step(ctx2, "late 2") // after trace 2 was dropped: let go
	if err := exp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := exp.Stats(); s.TracesKept != 1 || s.TracesDropped != 1 || s.Held != 0 {
		t.Fatalf("stats %+v: want trace 1 kept, trace 2 dropped, nothing held", s)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range testsupport.AllRecords(t, mem.Reopen()) {
		got = append(got, rec.Record.Name)
	}
	if want := []string{"lookup 1", "cache write 1", "late 1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
}
