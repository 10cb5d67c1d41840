package exporter_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A server as real programs are: otelhttp instruments every request (spans
// without records.kind, third-party instrumentation), a cache-fill handler
// makes compile records inside some of them, and concurrent clients hit it
// on loopback. Under the default marks policy only the requests that
// enclose a record are recorded; the tree the readers build follows the
// spans' parent ids (a compile under its request, concurrent requests
// siblings), and the store grows with the work done, not with the traffic.
func TestOtelhttpServerWithConcurrentClients(t *testing.T) {
	mem := sessions.NewMemStore()
	exp, err := exporter.New("", exporter.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tracer := tp.Tracer("example.com/cache")

	var mu sync.Mutex
	cache := map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("/kernel/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		mu.Lock()
		hit := cache[name]
		cache[name] = true
		mu.Unlock()
		if !hit {
			_, span := tracer.Start(r.Context(), "compile "+name, spanbridge.Record("compile", spanbridge.Changed())...)
			span.End()
		}
		io.WriteString(w, name)
	})
	srv := httptest.NewServer(otelhttp.NewHandler(mux, "serve", otelhttp.WithTracerProvider(tp)))
	defer srv.Close()

	const clients, requests, kernels = 4, 100, 10
	testsupport.GetConcurrently(t, clients, requests, func(c, i int) string {
		return fmt.Sprintf("%s/kernel/k%d", srv.URL, (c*requests+i)%kernels)
	})
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	store := mem.Reopen()
	r := sessions.NewRecords(store)
	var id sessions.SessionID
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		id = s.ID
	}
	tree, err := explain.Tree(r, id)
	if err != nil {
		t.Fatal(err)
	}
	compiles, requestsKept := 0, 0
	for n := range tree.Walk() {
		kr, err := tree.Record(r, n)
		if err != nil {
			t.Fatal(err)
		}
		switch kr.Kind {
		case "compile":
			compiles++
			parent := tree.Parent(n)
			if parent == nil {
				t.Errorf("compile %q is not under a request", kr.Record.Name)
				break
			}
			p, err := tree.Record(r, parent)
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != sessions.MarksKind || p.Record.SpanID != kr.Record.ParentSpanID {
				t.Errorf("compile %q is not under the request whose span is its parent (%+v)", kr.Record.Name, p)
			}
			if p.Record.SpanKind != "server" {
				t.Errorf("its request is a %q span, want server", p.Record.SpanKind)
			}
		case sessions.MarksKind:
			requestsKept++
			if n.Depth != 0 {
				t.Errorf("request %q at depth %d: concurrent requests are siblings, never nested", kr.Record.Name, n.Depth)
			}
		default:
			t.Errorf("unexpected record of kind %q", kr.Kind)
		}
	}
	if compiles != kernels || requestsKept != kernels {
		t.Fatalf("%d compiles under %d requests kept, want %d of each: only the requests that compiled are marks worth keeping", compiles, requestsKept, kernels)
	}
	var bytes int
	for e, err := range store.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		bytes += len(e.Key) + len(e.Value)
	}
	t.Logf("%d requests from %d clients: %d records, %d bytes in the store (%.1f bytes a request; %d a compile)",
		clients*requests, clients, tree.Len(), bytes, float64(bytes)/(clients*requests), bytes/kernels)
}
