// Command cacheserver is the workload of the four-path test
// (collector/fourpath_test.go): one Go HTTP server, instrumented with
// otelhttp, with a cache of its own, whose every span goes down every path
// at once — recorded in process by exporter.New, and sent over OTLP/HTTP
// to Collectors — and which counts its own hits and misses per key: the
// truth the answers read from each path are held to.
//
// Its cache lookups come in the two shapes servers write:
//
//   - GET /get?key=K: the lookup span is a record (records.kind=cache,
//     cache.key=K); a miss says records.effect=changed on it, result=miss,
//     and computes in a child span (not a record); a hit leaves it
//     observed, result=hit. With &race=N a miss waits, before it computes,
//     until N misses of K asked to race have come, so that N requests
//     compute one key at once, whatever the scheduler does.
//   - GET /render?key=K[&race=N]: the lookup stays observed (result=hit or miss),
//     and a miss computes in a child record (records.kind=compute,
//     records.effect=changed): an observed lookup encloses a changed
//     compute.
//
// POST /evict?key=K drops K from the cache (the next lookup misses: the
// cache lost it); POST /flush (not traced) flushes every store and OTLP
// export. On SIGTERM it stops serving, shuts its TracerProvider
// down (every store and every OTLP export flushed) and prints what it
// counted as one JSON object on standard output; it printed the address
// it serves on as the first line.
//
//	cacheserver -instance a-1 -host host-a -store ./a -otlp 127.0.0.1:4318,127.0.0.1:4319
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// raceWait bounds how long a miss of a request with &race=N waits for the
// others: a test whose requests never come fails rather than hangs.
const raceWait = 10 * time.Second

func main() {
	var (
		instance   = flag.String("instance", "cacheserver-1", "service.instance.id")
		host       = flag.String("host", "localhost", "host.name")
		version    = flag.String("version", "1.0.0", "service.version")
		store      = flag.String("store", "", "record in process into this store, keeping by session")
		storeTrace = flag.String("store-trace", "", "record in process into this store too, keeping by trace")
		otlp       = flag.String("otlp", "", "comma list of OTLP/HTTP endpoints (host:port) to send every span to")
	)
	flag.Parse()
	if err := run(*instance, *host, *version, *store, *storeTrace, *otlp); err != nil {
		fmt.Fprintln(os.Stderr, "cacheserver:", err)
		os.Exit(1)
	}
}

func run(instance, host, version, store, storeTrace, otlp string) error {
	ctx := context.Background()
	res := resource.NewSchemaless(
		attribute.String("service.name", "cacheserver"),
		attribute.String("service.version", version),
		attribute.String("service.instance.id", instance),
		attribute.String("host.name", host),
		attribute.Int("process.pid", os.Getpid()),
		attribute.String("os.type", runtime.GOOS),
		attribute.String("host.arch", runtime.GOARCH),
	)
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for dir, keepBy := range map[string]exporter.KeepBy{store: exporter.KeepBySession, storeTrace: exporter.KeepByTrace} {
		if dir == "" {
			continue
		}
		rec, err := exporter.New(dir, exporter.WithKeepBy(keepBy))
		if err != nil {
			return err
		}
		opts = append(opts, sdktrace.WithSpanProcessor(rec))
	}
	var failed atomic.Int64
	for ep := range strings.SplitSeq(otlp, ",") {
		if ep == "" {
			continue
		}
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(ep), otlptracehttp.WithInsecure())
		if err != nil {
			return err
		}
		opts = append(opts, sdktrace.WithBatcher(counted{exp, &failed}, sdktrace.WithBatchTimeout(100*time.Millisecond)))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	c := &cache{tracer: tp.Tracer("example.com/cacheserver"), values: map[string]string{}, computing: map[string]int{},
		racing: map[string]int{}, dropped: map[string]bool{}, counts: map[string]*keyCounts{}}
	c.cond = sync.NewCond(&c.mu)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /get", c.serve(true))
	mux.HandleFunc("GET /render", c.serve(false))
	mux.HandleFunc("POST /evict", c.evict)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// POST /flush, not traced, returns once every span ended so far is
	// in every store and acknowledged by every Collector (ForceFlush):
	// the test's way to know the Collectors have placed this instance's
	// session before another instance starts.
	top := http.NewServeMux()
	top.Handle("/", otelhttp.NewHandler(mux, "cacheserver", otelhttp.WithTracerProvider(tp)))
	top.HandleFunc("POST /flush", func(w http.ResponseWriter, r *http.Request) {
		if err := tp.ForceFlush(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	srv := &http.Server{Handler: top}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	fmt.Printf("http://%s\n", l.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	select {
	case <-stop:
	case err := <-served:
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := tp.Shutdown(sctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return json.NewEncoder(os.Stdout).Encode(truth{Instance: instance, Host: host, Keys: c.counts, ExportFailures: failed.Load()})
}

// truth is what the server counted, as it prints it at exit.
type truth struct {
	Instance       string                `json:"instance"`
	Host           string                `json:"host"`
	Keys           map[string]*keyCounts `json:"keys"`
	ExportFailures int64                 `json:"export_failures"`
}

// keyCounts is what the server counted of one key.
type keyCounts struct {
	Hits   int `json:"hits"`
	Misses int `json:"misses"`
	// Raced counts the misses that began while another compute of the
	// key was under way: the same work done twice at once.
	Raced int `json:"raced"`
	// Evicted counts the misses of a key the cache held and dropped
	// (POST /evict): the cache lost it.
	Evicted int `json:"evicted"`
}

// cache is the server's cache: values by key, the computes under way, and
// its counts.
type cache struct {
	tracer    trace.Tracer
	mu        sync.Mutex
	cond      *sync.Cond // signalled when a miss asked to race comes
	values    map[string]string
	computing map[string]int
	racing    map[string]int  // misses asked to race that came, by key
	dropped   map[string]bool // evicted, not computed since
	counts    map[string]*keyCounts
}

// lookup looks key up and says whether it hit, counting it; a miss is
// counted as computing until done is called.
func (c *cache) lookup(key string, race int) (hit bool, done func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.counts[key]
	if n == nil {
		n = &keyCounts{}
		c.counts[key] = n
	}
	if _, ok := c.values[key]; ok {
		n.Hits++
		return true, nil, nil
	}
	n.Misses++
	if c.computing[key] > 0 {
		n.Raced++
	}
	if c.dropped[key] {
		n.Evicted++
		delete(c.dropped, key)
	}
	c.computing[key]++
	if race > 1 {
		// A barrier: every miss asked to race waits for the others, so
		// that they compute at once. It counts arrivals, not computes
		// under way, which the first to go on makes fewer again.
		c.racing[key]++
		c.cond.Broadcast()
		deadline := time.AfterFunc(raceWait, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
		defer deadline.Stop()
		start := time.Now()
		for c.racing[key] < race {
			if time.Since(start) >= raceWait {
				c.computing[key]--
				return false, nil, fmt.Errorf("%d computes of %s at once asked, %d came in %v", race, key, c.racing[key], raceWait)
			}
			c.cond.Wait()
		}
	}
	return false, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.computing[key]--
		c.values[key] = "value of " + key
	}, nil
}

// serve looks the request's key up in the shape it names: with
// lookupChanges, the first (the lookup is the record, changed on a miss,
// which computes in a plain child span); without, the second (the lookup
// stays observed, and a miss computes in a record of its own, which
// changed something).
func (c *cache) serve(lookupChanges bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		race, _ := strconv.Atoi(r.URL.Query().Get("race"))
		ctx, span := c.tracer.Start(r.Context(), "lookup", spanbridge.Record("cache", attribute.String("cache.key", key))...)
		defer span.End()
		hit, done, err := c.lookup(key, race)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case hit:
			span.SetAttributes(attribute.String("result", "hit"))
		case lookupChanges:
			span.SetAttributes(attribute.String("result", "miss"), spanbridge.Changed())
			_, compute := c.tracer.Start(ctx, "compute")
			done()
			compute.End()
		default:
			span.SetAttributes(attribute.String("result", "miss"))
			_, compute := c.tracer.Start(ctx, "compute", spanbridge.Record("compute", attribute.String("cache.key", key), spanbridge.Changed())...)
			done()
			compute.End()
		}
		fmt.Fprintln(w, key)
	}
}

// evict drops a key from the cache.
func (c *cache) evict(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.values[key]; ok {
		delete(c.values, key)
		c.dropped[key] = true
	}
	fmt.Fprintln(w, key)
}

// counted is an OTLP exporter that counts the spans it was told failed:
// the test checks every path was given every span.
type counted struct {
	sdktrace.SpanExporter
	failed *atomic.Int64
}

func (c counted) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.failed.Add(int64(len(spans)))
	}
	return err
}
