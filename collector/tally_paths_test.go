package collector

// Issue 46's done-when, run for real: a server kept by trace (10
// requests that change, 390 that hit, on 7 keys) and what it counted of
// each key, against what each path's store holds — its records and the
// tally of what it let go — through the SDK processor in process, the
// Collector's records exporter, and the records processor -> Jaeger ->
// `records pull`.

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// tallyWorkload is the server's requests: the first lookup of each of 7
// keys misses (7 changes), three keys are evicted and missed again (3
// more), and 390 lookups hit.
func tallyWorkload() []fourPathStep {
	var steps []fourPathStep
	get := func(k int) fourPathStep { return fourPathStep{0, "GET", fmt.Sprintf("/get?key=t%d", k), 1} }
	for k := range 7 {
		steps = append(steps, get(k))
	}
	for i := range 200 {
		steps = append(steps, get(i%7))
	}
	for k := range 3 {
		steps = append(steps, fourPathStep{0, "POST", fmt.Sprintf("/evict?key=t%d", k), 1}, get(k))
	}
	for i := range 190 {
		steps = append(steps, get((i*3)%7))
	}
	return steps
}

func TestTallyCountsHitsOnThreePaths(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a server, gateways and Jaeger")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	jaeger := os.Getenv("OTELRECORDS_JAEGER") != ""
	tmp := t.TempDir()
	dir := func(name string) string { return filepath.Join(tmp, name) }
	x := startCollectorConfig(t, bins["otelcol"], exporterGateway(dir("b"), dir("bt")))
	endpoints := []string{strings.TrimSuffix(strings.TrimPrefix(x.url, "http://"), "/v1/traces")}
	var proc *collectorProc
	var query string
	if jaeger {
		var otlp string
		query, otlp = startJaeger(t)
		proc = startAt(t, bins["otelcol"], gatewayConfig(dir("c"), otlp, "trace"), freePorts(t))
		endpoints = append(endpoints, strings.TrimSuffix(strings.TrimPrefix(proc.url, "http://"), "/v1/traces"))
	}
	srv := startCacheServer(t, bins["cacheserver"], "-instance", "tally-1", "-host", "host-a", "-version", fourPathServiceVersion,
		"-store-trace", dir("at"), "-otlp", strings.Join(endpoints, ","))
	for _, step := range tallyWorkload() {
		step.do(t, []*cacheServer{srv})
	}
	truth := srv.stop(t)
	changed, hits := 0, 0
	for _, c := range truth.Keys {
		changed, hits = changed+c.Misses, hits+c.Hits
	}
	if len(truth.Keys) != 7 || changed != 10 || hits != 390 {
		t.Fatalf("the server counted %d keys, %d misses and %d hits: want 7, 10 and 390", len(truth.Keys), changed, hits)
	}
	x.stop(t)
	checkLog(t, "the exporter gateway", x)
	paths := []struct{ name, dir string }{{"(a) in process, by trace", dir("at")}, {"(b) exporter, by trace", dir("bt")}}
	if jaeger {
		proc.stop(t)
		checkLog(t, "the processor gateway", proc)
		pulled := dir("pulled")
		var out string
		for range 50 {
			out = records(t, bins["records"], "--dir", pulled, "pull", "--from", query, "--insecure")
			if got := keyCountsIn(t, pulled); got[fmt.Sprint("t", 6)].Hits > 0 || strings.Contains(out, "tall") {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("pull: %s", strings.TrimSpace(out))
		paths = append(paths, struct{ name, dir string }{"(c) processor by trace, Jaeger, pull", pulled})
	}
	for _, p := range paths {
		got := keyCountsIn(t, p.dir)
		for _, k := range slices.Sorted(maps.Keys(truth.Keys)) {
			want := truth.Keys[k]
			if got[k].Hits != want.Hits || got[k].Misses != want.Misses {
				t.Errorf("%s: key %s: %d hits and %d misses (records and tally), the server counted %d and %d", p.name, k, got[k].Hits, got[k].Misses, want.Hits, want.Misses)
			}
		}
	}
	if !jaeger {
		t.Skip("paths (a) and (b) checked; (c) needs Jaeger: OTELRECORDS_JAEGER=$(.ci/setup-jaeger) go test ./collector -run TallyCounts")
	}
}

// keyCountsIn returns, per cache.key, the lookups a store says hit and
// missed: its records of kind cache by their result, and what its
// sessions' tallies counted of the lookups they let go, by outcome.
func keyCountsIn(t *testing.T, dir string) map[string]keyCounts {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := sessions.NewRecords(st)
	out := map[string]keyCounts{}
	add := func(key string, hits, misses int) {
		c := out[key]
		c.Hits, c.Misses = c.Hits+hits, c.Misses+misses
		out[key] = c
	}
	for rec, err := range r.All("cache") {
		if err != nil {
			t.Fatal(err)
		}
		key, result := attr(rec.Record.Attributes, "cache.key"), attr(rec.Record.Attributes, "result")
		switch result {
		case "hit":
			add(key, 1, 0)
		case "miss":
			add(key, 0, 1)
		}
	}
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		tl, ok, err := tallies.Read(r, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		for _, e := range tl.Entries {
			if e.Kind == "cache" {
				add(attr(e.Key, "cache.key"), int(e.Outcomes["hit"]), int(e.Outcomes["miss"]))
			}
		}
	}
	return out
}

// attr returns the text of attribute k of attrs, or "".
func attr(attrs sessions.Attrs, k string) string {
	for _, a := range attrs {
		if a.Key == k {
			return a.Value.AsString()
		}
	}
	return ""
}

// tallyParts returns every part of every session's tally the stores in
// dirs hold, by session and part: the value's hex.
func tallyParts(t *testing.T, dirs []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range dirs {
		st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		r := sessions.NewRecords(st)
		for s, err := range r.Sessions() {
			if err != nil {
				t.Fatal(err)
			}
			for p, err := range tallies.Parts(r, s.ID) {
				if err != nil {
					t.Fatal(err)
				}
				v, err := p.MarshalCBOR()
				if err != nil {
					t.Fatal(err)
				}
				out[fmt.Sprint(p.Session, "/", p.Part)] = fmt.Sprintf("%x", v)
			}
		}
		st.Close()
	}
	return out
}
