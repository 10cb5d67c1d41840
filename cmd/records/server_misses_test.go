package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// lookupRun runs, as one process would, the server of issue 33: otelhttp
// instruments every request; /lookup makes a lookup record (observed) of
// its key, and on a miss a compile record (changed) inside it; 4 clients
// send 100 requests each over 10 keys: 10 misses, 390 hits. It returns
// the exporter's Stats after a Shutdown right after the load.
func lookupRun(t *testing.T, dir string, keepBy exporter.KeepBy) exporter.Stats {
	t.Helper()
	exp, err := exporter.New(dir, exporter.WithKeepBy(keepBy), exporter.WithLabel("lookup server"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tracer := tp.Tracer("example.com/lookup")
	var mu sync.Mutex
	cache := map[string]bool{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		ctx, lookup := tracer.Start(r.Context(), "lookup", spanbridge.Record("lookup", attribute.String("cache.key", key))...)
		defer lookup.End()
		mu.Lock()
		defer mu.Unlock()
		hit := cache[key]
		lookup.SetAttributes(attribute.Bool("hit", hit))
		if !hit {
			_, compile := tracer.Start(ctx, "compile", spanbridge.Record("compile", attribute.String("compile.key", key), spanbridge.Changed())...)
			cache[key] = true
			compile.End()
		}
		io.WriteString(w, key)
	})
	srv := httptest.NewServer(otelhttp.NewHandler(handler, "GET /lookup", otelhttp.WithTracerProvider(tp)))
	testsupport.GetConcurrently(t, serverClients, serverRequests, func(c, i int) string {
		return fmt.Sprintf("%s/lookup?key=k%d", srv.URL, (c*serverRequests+i)%serverKeys)
	})
	srv.Close()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.Stats()
}

// TestServerMissesAndHits: two runs of the server, keeping by trace and
// by session; why, cost, diff and the report agree on its 10 misses and
// 390 hits a run, kept or, when their traces were dropped, tallied (issue
// 46) (issue 33: why said "observed: the cache answered" of
// lookups that compiled, cost counted them as hits, and every diff of two
// runs differed in network.peer.port).
func TestServerMissesAndHits(t *testing.T) {
	const requests = serverClients * serverRequests
	for _, c := range []struct {
		name   string
		keepBy exporter.KeepBy
		hits   int // of a run, in the store
	}{
		{"by trace", exporter.KeepByTrace, 0}, // the hits' traces are dropped: Stats counts them
		{"by session", exporter.KeepBySession, requests - serverKeys},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for run := range 2 {
				s := lookupRun(t, dir, c.keepBy)
				if c.keepBy == exporter.KeepByTrace && (s.TracesKept != serverKeys || s.TracesDropped != requests-serverKeys ||
					s.TracesSeen != requests || s.TracesEvicted != 0) {
					t.Errorf("run %d: Stats after Shutdown %+v; want %d traces seen, %d kept, %d dropped",
						run, s, requests, serverKeys, requests-serverKeys)
				}
			}
			ids := serverSessions(t, dir)
			if len(ids) != 2 {
				t.Fatalf("sessions %v, want 2", ids)
			}

			// why: each run's lookup of k3 missed once, naming its compile,
			// and hit the rest of the time. The first run's miss was new;
			// the second run's, the same server restarted (its cache in
			// memory lost), forgotten.
			reasons, missed, tallied := map[string]int{}, 0, int64(0)
			for _, r := range decodeLines(t, mustRun(t, "why", "--dir", dir, "lookup", "cache.key=k3", "--json")) {
				if n, ok := r["tallied"].(json.Number); ok { // a session's hits let go, counted
					v, _ := n.Int64()
					tallied += v
					continue
				}
				reasons[r["reason"].(string)]++
				if r["verdict"] == "missed" {
					missed++
					in, _ := r["inside"].(map[string]any)
					if in == nil || in["kind"] != "compile" || fmt.Sprint(in["key"]) != "map[compile.key:k3]" {
						t.Errorf("why: a miss names %v inside, want the compile of k3", r["inside"])
					}
				}
			}
			if missed != 2 || reasons["new"] != 1 || reasons["forgotten"] != 1 || reasons["observed"] != 2*c.hits/serverKeys || len(reasons) > 3 {
				t.Errorf("why lookup cache.key=k3: %v, %d missed; want 2 missed (1 new, 1 forgotten), %d observed", reasons, missed, 2*c.hits/serverKeys)
			}
			// Every hit the store kept no record of, its session tallied:
			// kept and tallied, k3 hit as often as the server says.
			if allHits := 2 * (requests - serverKeys) / serverKeys; reasons["observed"]+int(tallied) != allHits {
				t.Errorf("why lookup cache.key=k3: %d observed and %d tallied hits, want %d in all", reasons["observed"], tallied, allHits)
			}
			if out := mustRun(t, "why", "--dir", dir, "lookup", "cache.key=k3"); !strings.Contains(out, "missed: compile compile.key=k3 inside changed") {
				t.Errorf("why does not say what the miss compiled:\n%s", out)
			}

			// cost: misses are work, never hits; the requests' children
			// that changed nothing are the hits alone.
			// Its hits are the server's own, kept or tallied: the hits of
			// the traces dropped were counted in their session's tally.
			var misses, hits, redone int64
			tallied = 0
			for _, row := range decodeLines(t, mustRun(t, "cost", "--dir", dir, "--top", "0", "--json")) {
				n := func(k string) int64 { v, _ := row[k].(json.Number).Int64(); return v }
				if row["table"] == "redone" && row["kind"] == "lookup" {
					misses, hits, tallied, redone = misses+n("misses"), hits+n("hits"), tallied+n("tallied"), redone+n("redone")
				}
			}
			if allHits := int64(2 * (requests - serverKeys)); misses != 2*serverKeys || hits != allHits || tallied != allHits-int64(2*c.hits) || redone != serverKeys {
				t.Errorf("cost: lookups %d missed, %d hit (%d tallied), %d redone; want %d, %d (%d), %d",
					misses, hits, tallied, redone, 2*serverKeys, allHits, allHits-int64(2*c.hits), serverKeys)
			}
			if out := mustRun(t, "cost", "--dir", dir); !regexp.MustCompile(`marks +lookup +\d+ +\d+ +\S+ +\S+ in ` + regexp.QuoteMeta(render.ChildCount(2*c.hits))).MatchString(out) {
				t.Errorf("cost: the requests' lookups that changed nothing are not the %d hits:\n%s", 2*c.hits, out)
			}

			// diff: two runs that did the same are the same, without a
			// flag; it says what it left out.
			out := mustRun(t, "diff", "--dir", dir, "--session", ids[0], "--against-session", ids[1])
			if !strings.Contains(out, "no differences") || !strings.Contains(out, "network.peer.port") {
				t.Errorf("diff of two runs: want no differences, and the peer's port left out:\n%s", out)
			}
			if !regexp.MustCompile(`lookup +lookup cache.key=k3 +missed +1 +1 `).MatchString(out) ||
				c.hits > 0 && !regexp.MustCompile(fmt.Sprintf(`lookup +lookup cache.key=k3 +hit +%d +%d `, c.hits/serverKeys, c.hits/serverKeys)).MatchString(out) {
				t.Errorf("diff: want k3's misses compared with misses and its hits with hits:\n%s", out)
			}

			// The report agrees: its summary says how many lookups and
			// requests missed and hit.
			html := mustRun(t, "report", "--dir", dir, "--session", ids[1])
			// Of the hits the session let go, its tally counted every one.
			hitCell := fmt.Sprintf(`%d</td>`, c.hits)
			if tallied := requests - serverKeys - c.hits; tallied > 0 {
				hitCell = fmt.Sprintf(`%d + %d tallied (median `, c.hits, tallied)
			}
			for _, kind := range []string{"lookup", "marks"} {
				want := fmt.Sprintf(`%s</a></td><td class="n">%d</td><td class="n">0</td><td class="n">%d</td><td class="n">%s`,
					kind, serverKeys+c.hits, serverKeys, hitCell)
				if !strings.Contains(html, want) {
					t.Errorf("the report's summary lacks %s", want)
				}
			}
		})
	}
}
