package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/internal/ground/version"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// cacheServer is the server of issue 43: otelhttp instruments every
// request; /get looks its key up in a cache of its own, the lookup a
// record of kind cache (cache.key, and result hit or miss). A miss
// changes something (it fills the cache) and computes the value inside,
// in a span of its own; a hit changes nothing. It counts its own hits
// and misses per key, as a service would.
type cacheServer struct {
	tracer trace.Tracer
	mu     sync.Mutex
	cache  map[string]bool
	hits   map[string]int
	misses map[string]int
	// atOnce holds, for a key, the computes that wait for one another
	// inside, so that requests sent together miss together.
	atOnce map[string]*sync.WaitGroup
}

func (s *cacheServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	ctx, lookup := s.tracer.Start(r.Context(), "lookup", spanbridge.Record("cache", attribute.String("cache.key", key))...)
	defer lookup.End()
	s.mu.Lock()
	hit, wait := s.cache[key], s.atOnce[key]
	if hit {
		s.hits[key]++
	} else {
		s.misses[key]++
	}
	s.mu.Unlock()
	if hit {
		lookup.SetAttributes(attribute.String("result", "hit"))
		io.WriteString(w, key)
		return
	}
	lookup.SetAttributes(attribute.String("result", "miss"), spanbridge.Changed())
	_, compute := s.tracer.Start(ctx, "compute "+key)
	if wait != nil {
		wait.Done()
		wait.Wait()
	}
	s.mu.Lock()
	s.cache[key] = true
	s.mu.Unlock()
	compute.End()
	io.WriteString(w, key)
}

// fleetInstance runs one instance of the cache server, its Resource
// naming it (service.instance.id, host.name) and its version, and records
// it twice: in process (exporter.New into inProcess) and as a gateway
// would (its ended spans imported by an importer.Importer into gateway).
// Its load: k1 four times, one after another; k2 twice at once, then
// twice more. It returns the server's own counts.
func fleetInstance(t *testing.T, name, inProcess, gateway string) (hits, misses map[string]int) {
	t.Helper()
	exp, err := exporter.New(inProcess, exporter.WithLabel("cache server "+name))
	if err != nil {
		t.Fatal(err)
	}
	ended := tracetest.NewSpanRecorder()
	res := resource.NewSchemaless(attribute.String("service.name", "api"), attribute.String("service.version", "1.4.2"),
		attribute.String("service.instance.id", name), attribute.String("host.name", "host-"+name))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp), sdktrace.WithSpanProcessor(ended), sdktrace.WithResource(res))
	s := &cacheServer{tracer: tp.Tracer("example.com/api"), cache: map[string]bool{}, hits: map[string]int{}, misses: map[string]int{},
		atOnce: map[string]*sync.WaitGroup{"k2": {}}}
	s.atOnce["k2"].Add(2)
	srv := httptest.NewServer(otelhttp.NewHandler(s, "GET /get", otelhttp.WithTracerProvider(tp)))
	get := func(clients int, key string) {
		testsupport.GetConcurrently(t, clients, 1, func(int, int) string { return srv.URL + "/get?key=" + key })
	}
	for range 4 {
		get(1, "k1")
	}
	get(2, "k2")
	get(1, "k2")
	get(1, "k2")
	srv.Close()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	im, err := importer.New(gateway, importer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	batch := importer.Batch{Resource: res.Attributes()}
	for _, sp := range ended.Ended() {
		batch.Spans = append(batch.Spans, importer.Span{
			TraceID: sp.SpanContext().TraceID(), SpanID: sp.SpanContext().SpanID(),
			ParentSpanID: sp.Parent().SpanID(), ParentRemote: sp.Parent().IsRemote(),
			Name: sp.Name(), Kind: sp.SpanKind(), Start: sp.StartTime(), End: sp.EndTime(),
			Attributes: sp.Attributes(), Events: sp.Events(), Links: sp.Links(), Status: sp.Status(),
			Scope: sp.InstrumentationScope(),
		})
	}
	if _, err := im.Import(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if err := im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s.hits, s.misses
}

// whyReasons returns what why --json says of the cache records of key,
// a word each: the reason, with at_once for raced.
func whyReasons(t *testing.T, key string, dirs ...string) []string {
	t.Helper()
	args := []string{"why", "cache", "cache.key=" + key, "--json"}
	for _, d := range dirs {
		args = append(args, "--dir", d)
	}
	var out []string
	for _, r := range decodeLines(t, mustRun(t, args...)) {
		word := r["reason"].(string)
		if word == "raced" {
			word += fmt.Sprint(r["at_once"])
		}
		out = append(out, word)
	}
	return out
}

// costOf returns cost --json's row of the cache records of key, as
// "records/hits/misses/redone/raced/new_here".
func costOf(t *testing.T, key string, dirs ...string) string {
	t.Helper()
	args := []string{"cost", "--top", "0", "--json"}
	for _, d := range dirs {
		args = append(args, "--dir", d)
	}
	for _, r := range decodeLines(t, mustRun(t, args...)) {
		if k, _ := r["key"].(map[string]any); r["table"] == "redone" && r["kind"] == "cache" && k["cache.key"] == key {
			return fmt.Sprintf("%v/%v/%v/%v/%v/%v", r["records"], r["hits"], r["misses"], r["redone"], r["raced"], r["new_here"])
		}
	}
	t.Fatalf("cost %v: no row of cache.key=%s", dirs, key)
	return ""
}

// TestFleetCache: two instances of a cache server, each recorded in
// process and through an Importer (a gateway of its own), read one store
// at a time and as a fleet. Every path says the same, and what the
// service did (issue 43: through the Collector its hits read as null,
// "forgotten ... the cache lost it", and cost counted none; read as a
// fleet, instance b's first miss blamed a's cache; requests that computed
// a key at once read "forgotten").
func TestFleetCache(t *testing.T) {
	root := t.TempDir()
	dir := func(name string) string { return filepath.Join(root, name) }
	hitsA, missesA := fleetInstance(t, "a", dir("a-process"), dir("a-gateway"))
	hitsB, missesB := fleetInstance(t, "b", dir("b-process"), dir("b-gateway"))
	// cost counts the server's own hits and misses, per key.
	counted := func(key string, hits, misses map[string]int) string {
		return fmt.Sprintf("%d/%d/%d", hits[key]+misses[key], hits[key], misses[key])
	}

	for _, store := range []string{"a-process", "a-gateway"} {
		// Every hit says it is observed, on every path: none is null.
		for _, r := range decodeLines(t, mustRun(t, "dump", "--dir", dir(store), "--kind", "cache", "--json")) {
			want := "changed"
			if r["attributes"].(map[string]any)["result"] == "hit" {
				want = "observed"
			}
			if r["effect"] != want {
				t.Errorf("%s: %v of result %v has effect %v, want %s", store, r["name"], r["attributes"].(map[string]any)["result"], r["effect"], want)
			}
		}
		// why and cost say what the server counted.
		if got, want := strings.Join(whyReasons(t, "k1", dir(store)), " "), "new observed observed observed"; got != want {
			t.Errorf("%s: why cache cache.key=k1: %s, want %s", store, got, want)
		}
		if got, want := strings.Join(whyReasons(t, "k2", dir(store)), " "), "new raced2 observed observed"; got != want {
			t.Errorf("%s: why cache cache.key=k2: %s, want %s", store, got, want)
		}
		if got, want := costOf(t, "k1", dir(store)), counted("k1", hitsA, missesA)+"/0/0/0"; got != want || want != "4/3/1/0/0/0" {
			t.Errorf("%s: cost of k1 (records/hits/misses/redone/raced/new here) %s, want %s, as the server counted (4/3/1/0/0/0)", store, got, want)
		}
		if got, want := costOf(t, "k2", dir(store)), counted("k2", hitsA, missesA)+"/0/1/0"; got != want || want != "4/2/2/0/1/0" {
			t.Errorf("%s: cost of k2 (records/hits/misses/redone/raced/new here) %s, want %s, as the server counted (4/2/2/0/1/0)", store, got, want)
		}
	}

	// As a fleet: b's first lookup of each key is new there, its own
	// cache empty; never the cache losing a's work.
	for _, fleet := range [][]string{{dir("a-gateway"), dir("b-gateway")}, {dir("a-process"), dir("b-process")}} {
		if got, want := strings.Join(whyReasons(t, "k2", fleet...), " "), "new raced2 observed observed new_here raced2 observed observed"; got != want {
			t.Errorf("%v: why cache cache.key=k2: %s, want %s", fleet, got, want)
		}
		for key, want := range map[string]string{"k1": "8/6/2/0/0/1", "k2": "8/4/4/0/2/1"} {
			if server := fmt.Sprintf("%d/%d/%d", hitsA[key]+missesA[key]+hitsB[key]+missesB[key], hitsA[key]+hitsB[key],
				missesA[key]+missesB[key]); !strings.HasPrefix(want, server+"/") {
				t.Errorf("the servers counted %s of %s, want %s", server, key, want)
			}
			if got := costOf(t, key, fleet...); got != want {
				t.Errorf("%v: cost of %s (records/hits/misses/redone/raced/new here) %s, want %s", fleet, key, got, want)
			}
		}
	}
	out := mustRun(t, "why", "cache", "cache.key=k2", "--dir", dir("a-gateway"), "--dir", dir("b-gateway"))
	for _, want := range []string{
		"raced: 2 requests computed cache.key=k2 at once; seq ",
		"new here — another instance: the first record of cache.key=k2 on this instance, which has a cache of its own; session ",
		"(host.name: host-a → host-b, service.instance.id: a → b)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("why, as a fleet, does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "forgotten") {
		t.Errorf("why, as a fleet, blames a cache:\n%s", out)
	}

	// VERSION is the service's, whichever path recorded it; --json keeps
	// the otelrecords version apart.
	for _, store := range []string{"a-process", "a-gateway"} {
		if out := mustRun(t, "sessions", "--dir", dir(store)); !regexp.MustCompile(`(?m)^\d+ .* 1\.4\.2 +cache=`).MatchString(out) {
			t.Errorf("%s: sessions does not show the service's version, 1.4.2:\n%s", store, out)
		}
		for _, s := range decodeLines(t, mustRun(t, "sessions", "--dir", dir(store), "--json")) {
			if s["service_version"] != "1.4.2" || s["otelrecords_version"] != version.Module() {
				t.Errorf("%s: sessions --json: service_version %v, otelrecords_version %v; want 1.4.2, %s",
					store, s["service_version"], s["otelrecords_version"], version.Module())
			}
		}
	}
}
