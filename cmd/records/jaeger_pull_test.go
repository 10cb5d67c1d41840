package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// storeEntries returns every key and value of the store in dir, read
// through the library's read-only open.
func storeEntries(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return testsupport.Entries(t, st)
}

// sameStore fails the test unless the stores in got and want hold the
// same entries, byte for byte, and read the same to records dump --json
// and records sessions --json.
func sameStore(t *testing.T, got, want string) {
	t.Helper()
	g, w := storeEntries(t, got), storeEntries(t, want)
	differ := 0
	for k, v := range w {
		if gv, ok := g[k]; !ok || !bytes.Equal(gv, v) {
			if differ++; differ <= 3 {
				t.Errorf("key %q: pulled %x (%t)\nwant %x", k, gv, ok, v)
			}
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("the pulled store has %q, which the original has not", k)
		}
	}
	if differ > 0 || len(g) != len(w) {
		t.Errorf("%d of %d entries differ; the pulled store has %d", differ, len(w), len(g))
	}
	for _, view := range [][]string{{"dump", "--json"}, {"sessions", "--json"}} {
		if a, b := mustRun(t, append([]string{"--dir", got}, view...)...), mustRun(t, append([]string{"--dir", want}, view...)...); a != b {
			t.Errorf("records %s differs:\n%.3000s\nwant\n%.3000s", strings.Join(view, " "), a, b)
		}
	}
}

// replayAndWait replays the store in dir to Jaeger and waits until Jaeger
// holds every span (ingestion is asynchronous).
func replayAndWait(t *testing.T, j *jaeger, dir, service string) {
	t.Helper()
	code, _, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", j.otlpGRPC, "--insecure", "--timeout", "20s")
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	n := len(storedRecords(t, dir))
	if got := j.waitForSpans(t, service, n, true); len(got.spans) < n {
		t.Fatalf("Jaeger holds %d spans of %s, want %d", len(got.spans), service, n)
	}
}

// pullFrom runs records pull from j into dir, and returns its output.
func pullFrom(t *testing.T, j *jaeger, dir string, args ...string) string {
	t.Helper()
	code, out, errOut := runRecords(t, append([]string{"--dir", dir, "pull", "--from", j.queryURL()}, args...)...)
	if code != exitOK {
		t.Fatalf("pull: exit %d: %s", code, errOut)
	}
	return out
}

// serverByTrace runs an otelhttp server recording by trace
// (exporter.KeepByTrace) as service: each request compiles its key on a
// miss (changed: the request's trace is kept) and answers from its cache
// on a hit (its trace is dropped). Clients ask for keys prefix0..prefix4,
// each several times.
func serverByTrace(t *testing.T, dir, service, prefix string) {
	t.Helper()
	exp, err := exporter.New(dir, exporter.WithKeepBy(exporter.KeepByTrace), exporter.WithLabel(service+" by trace"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service), attribute.String("service.version", "2.0.0"))))
	tracer := tp.Tracer("example.com/lookup")
	var mu sync.Mutex
	compiled := map[string]bool{}
	srv := httptest.NewServer(otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		mu.Lock()
		defer mu.Unlock()
		_, span := tracer.Start(r.Context(), "compile", spanbridge.Record("compile", attribute.String("compile.key", key))...)
		if !compiled[key] {
			compiled[key] = true
			span.AddEvent("miss", trace.WithAttributes(attribute.Int("tier", 2)))
			span.SetAttributes(attribute.Int("artifact.bytes", 100*len(key)), spanbridge.Changed())
		}
		span.End()
		io.WriteString(w, key)
	}), "serve", otelhttp.WithTracerProvider(tp)))
	defer srv.Close()
	testsupport.GetConcurrently(t, 3, 10, func(c, i int) string { return fmt.Sprintf("%s/lookup?key=%s%d", srv.URL, prefix, (c+i)%5) })
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The exact round trip, against a real Jaeger: the example's store, and a
// server session recorded by trace, replayed to Jaeger and pulled back,
// are the stores they were, byte for byte; a second pull writes nothing;
// --where pulls the sessions that hold a record, whole; --service and
// --since narrow what is read.
func TestJaegerPull(t *testing.T) {
	bin := jaegerBinary(t)
	j := startJaeger(t, bin)

	example := filepath.Join(t.TempDir(), "example")
	runExample(t, example)
	replayAndWait(t, j, example, "example-build")
	pulled := filepath.Join(t.TempDir(), "pulled")
	out := pullFrom(t, j, pulled, "--service", "example-build")
	if !strings.HasPrefix(out, fmt.Sprintf("pulled 1 session, %d records, from %s into %s", len(storedRecords(t, example)), j.queryURL(), pulled)) {
		t.Errorf("pull said %q", out)
	}
	sameStore(t, pulled, example)

	// Pulling again fetches the same spans and writes nothing.
	if out := pullFrom(t, j, pulled); !strings.HasPrefix(out, "pulled 0 sessions, 0 records") ||
		!strings.Contains(out, fmt.Sprintf("(%d records read were in the store already", len(storedRecords(t, example)))) {
		t.Errorf("a second pull said %q", out)
	}
	sameStore(t, pulled, example)

	server := filepath.Join(t.TempDir(), "server")
	serverByTrace(t, server, "lookup", "k")
	between := time.Now()
	serverByTrace(t, server, "lookup", "j") // a second run, other keys
	if n := len(storedRecords(t, server)); n == 0 {
		t.Fatal("the server kept nothing")
	}
	replayAndWait(t, j, server, "lookup")
	pulledServer := filepath.Join(t.TempDir(), "pulled-server")
	pullFrom(t, j, pulledServer, "--service", "lookup")
	sameStore(t, pulledServer, server)

	// --where: the sessions holding a record with the key, whole; the
	// example holds none.
	where := filepath.Join(t.TempDir(), "where")
	if out := pullFrom(t, j, where, "--where", "compile.key=k3"); !strings.HasPrefix(out, "pulled 1 session,") {
		t.Errorf("pull --where said %q", out)
	}
	ids := serverSessions(t, server)
	if got := serverSessions(t, where); len(got) != 1 || got[0] != ids[0] {
		t.Errorf("pull --where compile.key=k3 gave sessions %v, want the first server run's, %s", got, ids[0])
	}
	if a, b := mustRun(t, "--dir", where, "dump", "--json"), mustRun(t, "--dir", server, "dump", "--json", "--session", ids[0]); a != b {
		t.Errorf("pull --where did not give the session whole:\n%.2000s\nwant\n%.2000s", a, b)
	}

	// --since between the server's runs reads the second.
	recent := filepath.Join(t.TempDir(), "recent")
	pullFrom(t, j, recent, "--since", between.Format(time.RFC3339Nano))
	if got := serverSessions(t, recent); len(got) != 1 || got[0] != ids[1] {
		t.Errorf("pull --since between the runs gave sessions %v, want the second run's, %s", got, ids[1])
	}
}

// What is not a Jaeger query service, or does not answer, is said to be
// so, and writes nothing; TLS and headers are taken as replay takes them.
func TestJaegerPullEndpoints(t *testing.T) {
	bin := jaegerBinary(t)
	j := startJaeger(t, bin)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, c := range []struct {
		from, want string
		code       int
	}{
		{closed, "cannot be reached", exitError},
		{"http://" + j.otlpHTTP, "not a Jaeger query service", exitError},
		{"http://" + j.health, "not a Jaeger query service", exitError},
		{"http://" + j.query + "/not/here", "not a Jaeger query service", exitError},
		{"query.invalid:10086", "want a URL", exitUsage}, // never dialled: refused as it is
		{"http://user:pw@" + j.query, "must not hold credentials", exitUsage},
	} {
		dir := filepath.Join(t.TempDir(), "store")
		code, _, errOut := runRecords(t, "--dir", dir, "pull", "--from", c.from, "--timeout", "5s")
		if code != c.code || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "pw") {
			t.Errorf("pull --from %s: exit %d, %q; want %d and %q", c.from, code, errOut, c.code, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
			t.Errorf("pull --from %s wrote a store", c.from)
		}
	}
	// http:// is the user's choice, said in the URL (issue 43): no
	// --insecure needed.
	if code, out, errOut := runRecords(t, "--dir", t.TempDir(), "pull", "--from", j.queryURL()); code != exitOK || !strings.HasPrefix(out, "pulled 0 sessions") {
		t.Errorf("pull --from http:// without --insecure: exit %d, %q %q", code, out, errOut)
	}

	// Behind a TLS proxy that wants an API key: the CA and the header
	// come from the variables replay reads.
	proxy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "s3cret value" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: j.query}).ServeHTTP(w, r)
	}))
	// The handshake refused without the CA is logged by the server, on a
	// goroutine of its own: not through the process's log, which run
	// sends to the command's stderr while it runs.
	proxy.Config.ErrorLog = log.New(io.Discard, "", 0)
	proxy.StartTLS()
	defer proxy.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	code, _, errOut := runRecords(t, "--dir", dir, "pull", "--from", proxy.URL)
	if code != exitError || !strings.Contains(errOut, "certificate") {
		t.Errorf("pull over TLS without the CA: exit %d, %q", code, errOut)
	}
	// --insecure skips the check of the certificate, and only that: the
	// proxy is reached, and wants its key.
	code, _, errOut = runRecords(t, "--dir", dir, "pull", "--from", proxy.URL, "--insecure")
	if code != exitError || !strings.Contains(errOut, "refused") {
		t.Errorf("pull over TLS with --insecure, without the CA: exit %d, %q", code, errOut)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", ca)
	code, _, errOut = runRecords(t, "--dir", dir, "pull", "--from", proxy.URL)
	if code != exitError || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, "OTEL_EXPORTER_OTLP_HEADERS") {
		t.Errorf("pull over TLS without the key: exit %d, %q", code, errOut)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret%20value")
	code, out, errOut := runRecords(t, "--dir", dir, "pull", "--from", proxy.URL)
	if code != exitOK || !strings.HasPrefix(out, "pulled 0 sessions") || strings.Contains(out+errOut, "s3cret") {
		t.Errorf("pull over TLS with the CA and the key: exit %d, %q %q", code, out, errOut)
	}
}
