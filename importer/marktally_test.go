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
)

// cacheServer is the four-path test's cacheserver (collector/internal/
// cacheserver) as spans, its first instance's workload: each request an
// otelhttp server span around a cache lookup. A /get miss is a changed
// lookup enclosing a "compute" span that is no record (an implicit mark
// enclosing nothing); a /render miss computes in a changed record of its
// own; POST /evict encloses nothing. Each request starts 10 ms after the
// last, from at; its spans end in the order the SDK ends them.
func cacheServer(tr trace.Tracer, at time.Time) {
	cache := map[string]bool{}
	step := func(d time.Duration) trace.SpanEventOption { at = at.Add(d); return trace.WithTimestamp(at) }
	serve := func(method, path, key string, lookupChanges bool) {
		ctx, req := tr.Start(context.Background(), method+" "+path, trace.WithSpanKind(trace.SpanKindServer), step(10*time.Millisecond))
		if path == "/evict" {
			delete(cache, key)
			req.End(step(13 * time.Microsecond))
			return
		}
		lctx, look := tr.Start(ctx, "lookup", append(spanbridge.Record("cache", attribute.String("cache.key", key)), step(10*time.Microsecond))...)
		switch {
		case cache[key]:
			look.SetAttributes(attribute.String("result", "hit"))
		case lookupChanges:
			look.SetAttributes(attribute.String("result", "miss"), spanbridge.Changed())
			_, compute := tr.Start(lctx, "compute", step(time.Microsecond))
			compute.End(step(2 * time.Microsecond))
		default:
			look.SetAttributes(attribute.String("result", "miss"))
			_, compute := tr.Start(lctx, "compute", append(spanbridge.Record("compute", attribute.String("cache.key", key), spanbridge.Changed()), step(time.Microsecond))...)
			compute.End(step(2 * time.Microsecond))
		}
		cache[key] = true
		look.End(step(20 * time.Microsecond))
		req.End(step(50 * time.Microsecond))
	}
	for _, r := range []struct{ method, path, key string }{
		{"GET", "/get", "k1"}, {"GET", "/get", "k1"}, {"GET", "/get", "k1"},
		{"GET", "/get", "k2"}, {"GET", "/get", "k2"},
		{"GET", "/get", "k3"}, {"POST", "/evict", "k3"}, {"GET", "/get", "k3"}, {"GET", "/get", "k3"},
		{"GET", "/render", "p1"}, {"GET", "/render", "p1"},
	} {
		serve(r.method, r.path, r.key, r.path == "/get")
	}
}

// marksTallied is what the tallies of store's sessions count of implicit
// marks let go, by name: "count wall".
func marksTallied(t *testing.T, store sessions.Store) map[string]string {
	t.Helper()
	rd := sessions.NewRecords(store)
	out := map[string]string{}
	sums := map[string][2]int64{}
	for s, err := range rd.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		tl, _, err := rd.Tally(s.ID)
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
	for name, c := range sums {
		out[name] = fmt.Sprintf("%d marks, %v", c[0], time.Duration(c[1]))
	}
	return out
}

// The implicit marks the Importer lets go are the SDK processor's, for
// the same spans, kept by session and by trace: the cacheserver's
// "compute" spans inside changed lookups, and POST /evict, which
// encloses nothing (collector TestOneAnswerOnFourPaths, "implicit marks
// tallied"). The spans come as a sender's batch processor sends them,
// a request's in one batch, and the Importer's rounds run between them;
// its gateway outlives the sender by seconds.
func TestImportTallyOfImplicitMarksIsTheProcessors(t *testing.T) {
	for _, c := range []struct {
		keepBy KeepBy
		after  time.Duration // how long the gateway outlives the sender
	}{{KeepBySession, 10 * time.Second}, {KeepByTrace, 10 * time.Second}, {KeepBySession, 0}, {KeepByTrace, 0}} {
		keepBy := c.keepBy
		t.Run(fmt.Sprint(keepBy, "/", c.after), func(t *testing.T) {
			mem := sessions.NewMemStore()
			exp, err := exporter.New("", exporter.WithStore(mem), exporter.WithKeepBy(keepBy))
			if err != nil {
				t.Fatal(err)
			}
			ended := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp), sdktrace.WithSpanProcessor(ended))
			cacheServer(tp.Tracer("example.com/cacheserver"), epoch)
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := marksTallied(t, mem.Reopen())
			if len(want) == 0 {
				t.Fatal("the processor tallied no implicit mark")
			}

			r := newImportRig(t, Config{}, WithKeepBy(keepBy))
			var batch []Span
			for i, s := range ended.Ended() {
				batch = append(batch, importedSpan(s))
				if i+1 < len(ended.Ended()) && ended.Ended()[i+1].SpanContext().TraceID() == s.SpanContext().TraceID() {
					continue
				}
				r.send(node, batch...)
				batch = nil
				r.clock.Advance(10 * time.Millisecond)
				r.im.tick()
			}
			for range c.after / tickEvery {
				r.clock.Advance(tickEvery)
				r.im.tick()
			}
			if err := r.im.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := marksTallied(t, r.store)
			for _, name := range slices.Sorted(maps.Keys(want)) {
				if got[name] != want[name] {
					t.Errorf("%q: the Importer tallied %q, the processor %q", name, got[name], want[name])
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%q: the Importer tallied %q, the processor nothing", name, got[name])
				}
			}
		})
	}
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
