package importer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// cacheRequest is one request to cacheServer: its method and path, the
// key it names, and, for a miss, whether another request computes the
// key at once (the cacheserver's race=2: the next request misses too).
type cacheRequest struct {
	method, path, key string
	race              bool
}

// cacheServerWorkload is the four-path test's first instance's workload
// (collector/fourpath_test.go, cache-1).
var cacheServerWorkload = []cacheRequest{
	{"GET", "/get", "k1", false}, {"GET", "/get", "k1", false}, {"GET", "/get", "k1", false},
	{"GET", "/get", "k2", true}, {"GET", "/get", "k2", false}, {"GET", "/get", "k2", false},
	{"GET", "/get", "k3", false}, {"POST", "/evict", "k3", false}, {"GET", "/get", "k3", false}, {"GET", "/get", "k3", false},
	{"GET", "/render", "p1", false}, {"GET", "/render", "p1", false},
}

// cacheServer runs the four-path test's cacheserver (collector/internal/
// cacheserver) as spans on tr: each request an otelhttp server span
// around a cache lookup. A /get miss is a changed lookup enclosing a
// "compute" span that is no record (an implicit mark enclosing nothing);
// a /render miss computes in a changed record of its own; a hit is an
// observed lookup; POST /evict encloses nothing. Each request starts
// 10 ms after the last, from at; its spans end in the order the
// cacheserver ends them.
func cacheServer(tr trace.Tracer, at time.Time, workload []cacheRequest) {
	cache := map[string]bool{}
	step := func(d time.Duration) trace.SpanEventOption { at = at.Add(d); return trace.WithTimestamp(at) }
	for _, q := range workload {
		ctx, req := tr.Start(context.Background(), q.method+" "+q.path, trace.WithSpanKind(trace.SpanKindServer), step(10*time.Millisecond))
		if q.path == "/evict" {
			delete(cache, q.key)
			req.End(step(13 * time.Microsecond))
			continue
		}
		lctx, look := tr.Start(ctx, "lookup", append(spanbridge.Record("cache", attribute.String("cache.key", q.key)), step(10*time.Microsecond))...)
		switch {
		case cache[q.key]:
			look.SetAttributes(attribute.String("result", "hit"))
		case q.path == "/get":
			look.SetAttributes(attribute.String("result", "miss"), spanbridge.Changed())
			_, compute := tr.Start(lctx, "compute", step(time.Microsecond))
			compute.End(step(2 * time.Microsecond))
		default:
			look.SetAttributes(attribute.String("result", "miss"))
			_, compute := tr.Start(lctx, "compute", append(spanbridge.Record("compute", attribute.String("cache.key", q.key), spanbridge.Changed()), step(time.Microsecond))...)
			compute.End(step(2 * time.Microsecond))
		}
		cache[q.key] = !q.race
		look.End(step(20 * time.Microsecond))
		req.End(step(50 * time.Microsecond))
	}
}

// marksTallied is what the tallies of store's sessions count of implicit
// marks let go, by name: count and time.
func marksTallied(t *testing.T, store sessions.Store) map[string]string {
	t.Helper()
	rd := sessions.NewRecords(store)
	sums := map[string][2]int64{}
	for s, err := range rd.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		tl, _, err := tallies.Read(rd, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tl.Entries {
			if e.Kind == sessions.MarksKind {
				c := sums[e.Name]
				c[0] += e.Count
				c[1] += int64(e.Wall)
				sums[e.Name] = c
			}
		}
	}
	out := map[string]string{}
	for name, c := range sums {
		out[name] = fmt.Sprintf("%d marks, %v", c[0], time.Duration(c[1]))
	}
	return out
}

// The implicit marks the Importer lets go are the SDK processor's, for
// the same spans, kept by session and by trace (collector
// TestOneAnswerOnFourPaths, "implicit marks tallied"): the cacheserver's
// "compute" spans inside changed lookups (5 of cache-1's), and POST
// /evict, which encloses nothing — and, in a workload that begins with
// them, marks let go before the session's first change. The spans come
// as a sender's batch processor sends them: a request's in one batch, or
// each span in a batch of its own, up to a second apart (a parent
// after the trace it closes is decided, under KeepByTrace); the gateway
// stops at once after the sender, or outlives it by seconds. Before
// the Importer decided at Shutdown the marks still waiting for their
// grace, it tallied none of those.
func TestImportTallyOfImplicitMarksIsTheProcessors(t *testing.T) {
	early := append([]cacheRequest{{"POST", "/evict", "k8", false}, {"POST", "/evict", "k9", false}}, cacheServerWorkload...)
	workloads := map[string][]cacheRequest{"cache-1": cacheServerWorkload, "let-go-first": early}
	for _, wl := range slices.Sorted(maps.Keys(workloads)) {
		for _, keepBy := range []KeepBy{KeepBySession, KeepByTrace} {
			for _, perSpan := range []bool{false, true} {
				for _, after := range []time.Duration{0, 10 * time.Second} {
					name := fmt.Sprintf("%s/%s/per-span=%v/after=%v", wl, keepBy, perSpan, after)
					t.Run(name, func(t *testing.T) {
						want, ended := processorTally(t, keepBy, workloads[wl])
						got := importerTally(t, keepBy, ended, perSpan, after)
						if !maps.Equal(got, want) {
							t.Errorf("the Importer tallied %v, the processor %v", got, want)
						}
					})
				}
			}
		}
	}
}

// processorTally runs the workload through the SDK processor, keeping by
// keepBy, and returns what it tallied of implicit marks, and the spans.
func processorTally(t *testing.T, keepBy KeepBy, workload []cacheRequest) (map[string]string, []sdktrace.ReadOnlySpan) {
	t.Helper()
	mem := sessions.NewMemStore()
	exp, err := exporter.New("", exporter.WithStore(mem), exporter.WithKeepBy(keepBy))
	if err != nil {
		t.Fatal(err)
	}
	ended := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp), sdktrace.WithSpanProcessor(ended))
	cacheServer(tp.Tracer("example.com/cacheserver"), epoch, workload)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := marksTallied(t, mem.Reopen())
	if len(want) == 0 {
		t.Fatal("the processor tallied no implicit mark")
	}
	return want, ended.Ended()
}

// importerTally imports spans, as they ended, into an Importer keeping by
// keepBy, a request's spans a batch (or each span one, perSpan: a span
// in three 200 ms after the last, another 1 s after it), its rounds
// running every tickEvery between them and for after past the last; then
// shuts it down, and returns what it tallied of implicit marks.
func importerTally(t *testing.T, keepBy KeepBy, ended []sdktrace.ReadOnlySpan, perSpan bool, after time.Duration) map[string]string {
	t.Helper()
	r := newImportRig(t, Config{}, WithKeepBy(keepBy))
	wait := func(d time.Duration) {
		for ; d > 0; d -= tickEvery {
			r.clock.Advance(tickEvery)
			r.im.tick()
		}
	}
	var batch []Span
	for i, s := range ended {
		batch = append(batch, importedSpan(s))
		if !perSpan && i+1 < len(ended) && ended[i+1].SpanContext().TraceID() == s.SpanContext().TraceID() {
			continue
		}
		r.send(node, batch...)
		batch = nil
		switch {
		case !perSpan:
			wait(10 * time.Millisecond)
		case i%3 == 2:
			wait(time.Second)
		default:
			wait(200 * time.Millisecond)
		}
	}
	wait(after)
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return marksTallied(t, r.store)
}

// importedSpan is an SDK span as a Collector hands it to the Importer.
func importedSpan(s sdktrace.ReadOnlySpan) Span {
	return Span{
		TraceID: s.SpanContext().TraceID(), SpanID: s.SpanContext().SpanID(),
		ParentSpanID: s.Parent().SpanID(), ParentRemote: s.Parent().IsRemote(),
		Name: s.Name(), Kind: s.SpanKind(), Start: s.StartTime(), End: s.EndTime(),
		Attributes: s.Attributes(), Events: s.Events(), Links: s.Links(), Status: s.Status(),
		Scope: s.InstrumentationScope(),
	}
}

// The implicit marks a kept session lets go after its tally was first
// written reach the store while the Importer runs: by the rewrite every
// TallyEvery while its sender sends, and before it is parked once quiet
// — without a Shutdown.
func TestImportTallyOfMarksLetGoIsWrittenWhileRunning(t *testing.T) {
	r := newImportRig(t, Config{})
	r.send(node, span("fill", 1, 0, 0, changed("cache")...))
	r.im.tick()
	sent := 0
	request := func() {
		sent++
		req := span("GET /health", 1, 0, sent)
		req.TraceID, req.Kind = trace.TraceID{2, byte(sent >> 8), byte(sent)}, trace.SpanKindServer
		r.send(node, req)
	}
	tallied := func() int64 {
		var n int64
		for s, err := range sessions.NewRecords(r.store).Sessions() {
			if err != nil {
				t.Fatal(err)
			}
			tl, _, err := tallies.Read(sessions.NewRecords(r.store), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			n += tl.Count()
		}
		return n
	}
	// A request a second for 35 s: the tally is rewritten once 30 s passed.
	for range 35 {
		request()
		for range time.Second / tickEvery {
			r.clock.Advance(tickEvery)
			r.im.tick()
		}
	}
	if n := tallied(); n < 30 {
		t.Fatalf("%d marks tallied in the store after 35 s of requests, want the 30 s rewrite's", n)
	}
	// Quiet: parked, with every mark written.
	for range (parkAfter + time.Second) / tickEvery {
		r.clock.Advance(tickEvery)
		r.im.tick()
	}
	if st := r.im.Stats(); st.Parked == 0 {
		t.Fatalf("the quiet session is not parked: %+v", st)
	}
	if n := tallied(); n != int64(sent) {
		t.Fatalf("%d marks tallied once parked, want the %d requests let go", n, sent)
	}
}
