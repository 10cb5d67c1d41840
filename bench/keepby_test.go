//go:build bench

package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// missEvery is how often a missing server's request compiles: one in 40,
// issue 23's 10 misses in 400 requests.
const missEvery = 40

// BenchmarkKeepBy measures a server under each retention unit: what a
// request costs the process (CPU, every goroutine, Badger's included) and
// the store (bytes of keys and values, what the store holds live), for a
// warm server (every request a cache hit) and a missing one (one request
// in missEvery compiles). A request is a server span (an implicit mark,
// as otelhttp makes), a lookup record inside it, and on a miss a compile
// record that changed the cache inside that: the server of
// TestKeepByTraceServerStoresOnlyTheMisses, without the HTTP, whose cost
// would hide ours. Each sub-benchmark runs b.N requests on a fresh
// exporter into a store of its own, from a collected heap, then flushes
// — and, under KeepByTrace, waits for every trace to be decided (the hits
// are dropped TraceGrace after their request ends) — inside the CPU
// clock; then shuts down and measures the store. KeepBySession is the
// reference. Run it with a fixed -benchtime (4000x) and -count 5, and
// take the medians.
func BenchmarkKeepBy(b *testing.B) {
	for _, server := range []string{"warm", "missing"} {
		for _, by := range []exporter.KeepBy{exporter.KeepBySession, exporter.KeepByTrace} {
			b.Run(server+"/"+by.String(), func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), "store")
				exp, err := exporter.New(dir, exporter.WithKeepBy(by))
				if err != nil {
					b.Fatal(err)
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
				tr := tp.Tracer("bench")
				ctx := context.Background()
				cpu := startCPU(b)
				for i := range b.N {
					serve(ctx, tr, i, server == "missing" && i%missEvery == 0)
				}
				if err := tp.ForceFlush(ctx); err != nil {
					b.Fatal(err)
				}
				if by == exporter.KeepByTrace {
					waitDecided(b, exp)
				}
				cpu = processCPU(b) - cpu
				b.StopTimer()
				st := exp.Stats()
				checkShutdown(b, tp)
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/req")
				b.ReportMetric(float64(storeBytes(b, dir))/float64(b.N), "bytes/req")
				b.ReportMetric(float64(st.Written)/float64(b.N), "records/req")
				// Traces whose root has ended are evicted first when the
				// requests come faster than the budget holds a grace's
				// worth of them (about 1,700 of these): hits, which
				// would have been dropped anyway. A miss is never lost.
				b.ReportMetric(float64(st.TracesEvicted)/float64(b.N), "evicted/req")
				misses := int64(0)
				if server == "missing" {
					misses = int64((b.N + missEvery - 1) / missEvery)
				}
				if st.Dropped != 0 || (by == exporter.KeepByTrace && st.TracesKept != misses) {
					b.Fatalf("requests lost: %+v, want %d traces kept", st, misses)
				}
				if server == "warm" && st.StoreOpens != 0 {
					b.Fatalf("a warm server opened its store: %+v", st)
				}
			})
		}
	}
}

// lookupKeys are the keys the benchmark's requests look up, made before
// the clock starts.
var lookupKeys = func() []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 1024)
	for i := range kv {
		kv[i] = attribute.String("key", fmt.Sprintf("kernel-%04d", i))
	}
	return kv
}()

// serve makes request i's spans: a server span, a lookup record inside
// it, and when miss a compile record that changed the cache.
func serve(ctx context.Context, tr trace.Tracer, i int, miss bool) {
	key := lookupKeys[i%len(lookupKeys)]
	ctx, req := tr.Start(ctx, "GET /lookup", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("url.path", "/lookup")))
	ctx, lookup := tr.Start(ctx, "lookup", spanbridge.Record("lookup", key)...)
	if miss {
		_, compile := tr.Start(ctx, "compile", spanbridge.Record("compile", key, spanbridge.Changed())...)
		compile.End()
	}
	lookup.End()
	req.End()
}

// waitDecided waits until exp holds no trace: every one kept or dropped.
func waitDecided(b *testing.B, exp *exporter.Exporter) {
	deadline := time.Now().Add(exporter.TraceGrace + 10*time.Second)
	for exp.Stats().Held != 0 {
		if time.Now().After(deadline) {
			b.Fatalf("traces still held: %+v", exp.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// storeBytes returns the bytes of keys and values the store in dir holds,
// 0 when there is no store.
func storeBytes(b *testing.B, dir string) int {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	n := 0
	for e, err := range st.Scan(nil, nil) {
		if err != nil {
			b.Fatal(err)
		}
		n += len(e.Key) + len(e.Value)
	}
	return n
}
