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
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The server scenario of issue 23: an otelhttp server whose /lookup
// handler compiles a key on a cache miss and answers from its cache
// otherwise, 4 clients x 100 requests over 10 keys.
const (
	serverClients  = 4
	serverRequests = 100
	serverKeys     = 10
)

// serverRun runs the server once, as one process would: a session of its
// own in the store at dir. Each compile takes compile, by its span's
// explicit timestamps, so that the durations the gate decides on do not
// depend on how loaded the machine is. The compile of k0 produces an
// artifact of artifactK0 bytes, the others of 100 bytes a character of
// their key. Each of the serverClients clients sends perClient requests.
func serverRun(t *testing.T, dir, label string, compile time.Duration, artifactK0, perClient int) {
	t.Helper()
	exp, err := exporter.New(dir, exporter.WithLabel(label))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tracer := tp.Tracer("example.com/lookup")

	c := &lookupCache{compiled: map[string]bool{}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		c.Lock()
		defer c.Unlock()
		start := time.Now()
		opts := append(spanbridge.Record("compile", attribute.String("compile.key", key)), trace.WithTimestamp(start))
		_, span := tracer.Start(r.Context(), "compile", opts...)
		if c.compiled[key] {
			span.End() // a hit: the cache answered, observed
		} else {
			c.compiled[key] = true
			size := 100 * len(key)
			if key == "k0" {
				size = artifactK0
			}
			span.SetAttributes(attribute.Int("artifact.bytes", size), spanbridge.Changed()) // its outcome
			span.End(trace.WithTimestamp(start.Add(compile)))
		}
		io.WriteString(w, key)
	})
	srv := httptest.NewServer(otelhttp.NewHandler(handler, "serve", otelhttp.WithTracerProvider(tp)))
	defer srv.Close()

	testsupport.GetConcurrently(t, serverClients, perClient, func(c, i int) string {
		return fmt.Sprintf("%s/lookup?key=k%d", srv.URL, (c*perClient+i)%serverKeys)
	})
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// lookupCache is what the server has compiled.
type lookupCache struct {
	sync.Mutex
	compiled map[string]bool
}

// serverSessions returns the ids of the store's sessions, oldest first.
func serverSessions(t *testing.T, dir string) []string {
	t.Helper()
	var ids []string
	for _, s := range decodeLines(t, mustRun(t, "sessions", "--dir", dir, "--json")) {
		ids = append(ids, fmt.Sprint(s["id"])) // a string (FORMAT.md 8), exact either way
	}
	return ids
}

// The answers read a server's session well (issue 23): each record says
// whether it did the work or found it done; cost counts the second run's
// compiles of the keys the first compiled as redone, and none of the
// hits; diff's gate names the compile that became 2x slower, and passes
// runs that are as fast however the hits' microseconds vary; why and the
// report agree with them.
func TestServerAnswers(t *testing.T) {
	dir := t.TempDir()
	const fast, slow = 20 * time.Millisecond, 40 * time.Millisecond
	serverRun(t, dir, "run 1", fast, 200, serverRequests)
	serverRun(t, dir, "run 2", slow, 300, serverRequests) // compiles 2x slower; k0's artifact differs
	ids := serverSessions(t, dir)
	if len(ids) != 2 {
		t.Fatalf("sessions %v, want 2", ids)
	}
	const requests = serverClients * serverRequests

	// The effect is shown: every request kept (keep-by-session), each
	// compile record changed on a miss and observed on a hit.
	effects := map[string]int{}
	for _, rec := range decodeLines(t, mustRun(t, "dump", "--dir", dir, "--session", ids[1], "--kind", "compile", "--json")) {
		effects[fmt.Sprint(rec["effect"])]++
	}
	if effects["changed"] != serverKeys || effects["observed"] != requests-serverKeys || len(effects) != 2 {
		t.Errorf("run 2's compile records by effect: %v; want %d changed, %d observed", effects, serverKeys, requests-serverKeys)
	}
	for _, rec := range decodeLines(t, mustRun(t, "timeline", "--dir", dir, "--session", ids[1], "--json")) {
		if rec["kind"] == "marks" && rec["effect"] != "observed" {
			t.Fatalf("timeline --json: a request's effect is %v, want observed", rec["effect"])
		}
	}
	if tl := mustRun(t, "timeline", "--dir", dir, "--session", ids[1], "--all"); !strings.Contains(tl, " changed ") || !strings.Contains(tl, " observed ") {
		t.Errorf("timeline does not show the effect:\n%.500s", tl)
	}
	// show rounds durations as the other views do (3 significant digits),
	// and says each record's effect.
	show := mustRun(t, "show", "compile", "--dir", dir, "--session", ids[1])
	if m := regexp.MustCompile(`\d\.\d{3,}|\d{4,}(\.\d+)?(ns|µs|ms)`).FindString(show); m != "" || !strings.Contains(show, "EFFECT") {
		t.Errorf("show prints %q: not rounded, or no effect column", m)
	}

	// Without --all, the 400 requests are summed up: one group, and the
	// five slowest whole (each with its compile record).
	tl := mustRun(t, "timeline", "--dir", dir, "--session", ids[1])
	if !strings.Contains(tl, "400 roots, by kind and name") || !regexp.MustCompile(`\n  marks +\S+ +400 +\S+ +\S+ +\S+ +\d+\n`).MatchString(tl) ||
		strings.Count(tl, "\n") != 1+2+2+1+5*2 {
		t.Errorf("timeline of 400 requests: want them grouped, and the 5 slowest whole:\n%s", tl)
	}

	// The critical path is one request's: its root, and the records of
	// its trace, never a chain of the requests that followed one another.
	traceOf := map[string]string{}
	for _, rec := range decodeLines(t, mustRun(t, "dump", "--dir", dir, "--session", ids[1], "--json")) {
		traceOf[rec["seq"].(json.Number).String()] = rec["trace_id"].(string)
	}
	sum := decodeLines(t, mustRun(t, "summary", "--dir", dir, "--session", ids[1], "--json"))[0]
	path := sum["critical_path"].(map[string]any)
	seqs := path["seqs"].([]any)
	if len(seqs) == 0 || fmt.Sprint(path["root_seq"]) != fmt.Sprint(seqs[0]) {
		t.Fatalf("critical_path %v: want it to start from its root_seq", path)
	}
	for _, seq := range seqs {
		if tr := traceOf[fmt.Sprint(seq)]; tr != traceOf[fmt.Sprint(seqs[0])] {
			t.Errorf("critical path %v: seq %v is of trace %s, its root of %s", seqs, seq, tr, traceOf[fmt.Sprint(seqs[0])])
		}
	}

	// cost: the second run's ten compiles are redone, 40ms each; the hits
	// are hits.
	var redone, hits, redoneNs, hitsOfK0 int64
	for _, row := range decodeLines(t, mustRun(t, "cost", "--dir", dir, "--top", "0", "--json")) {
		if row["table"] == "children" && row["child"] == "compile" {
			// The requests' compiles that changed nothing: the hits, read
			// from the effect each record stores.
			if n, ok := row["changed_nothing_ns"].(json.Number); !ok || n.String() == "0" {
				t.Errorf("cost: the requests' children that changed nothing: %v, want the hits' time", row["changed_nothing_ns"])
			}
		}
		if row["table"] != "redone" || row["kind"] != "compile" {
			continue
		}
		n := func(k string) int64 { v, _ := row[k].(json.Number).Int64(); return v }
		redone, redoneNs, hits = redone+n("redone"), redoneNs+n("redone_ns"), hits+n("hits")
		if fmt.Sprint(row["key"]) == "map[compile.key:k0]" {
			hitsOfK0 = n("hits")
		}
	}
	if redone != serverKeys || redoneNs != int64(serverKeys*slow) || hits != 2*(requests-serverKeys) {
		t.Errorf("cost: %d compiles redone in %v, %d hits; want %d redone in %v (the second run's), %d hits, never redone",
			redone, time.Duration(redoneNs), hits, serverKeys, serverKeys*slow, 2*(requests-serverKeys))
	}

	// why agrees: of k0, one new compile, one done again, and the hits
	// observed; the compile done again came out differently.
	var causes []string
	for _, r := range decodeLines(t, mustRun(t, "why", "--dir", dir, "compile", "compile.key=k0", "--json")) {
		causes = append(causes, r["reason"].(string))
	}
	count := func(cause string) (n int64) {
		for _, c := range causes {
			if c == cause {
				n++
			}
		}
		return n
	}
	if count("new") != 1 || count("observed") != hitsOfK0 || count("forgotten")+count("environment") != 1 {
		t.Errorf("why compile.key=k0: %d new, %d observed, %d done again; cost says %d hits and 1 redone",
			count("new"), count("observed"), count("forgotten")+count("environment"), hitsOfK0)
	}
	if out := mustRun(t, "why", "--dir", dir, "compile", "compile.key=k0"); !strings.Contains(out, "came out differently: artifact.bytes: 200 → 300") {
		t.Errorf("why compile.key=k0 does not say the compile came out differently:\n%.2000s", out)
	}

	// diff's gate: run 2's compiles are 2x slower, and named; the hits,
	// the requests, and the ports each run listens on are not (issue 33:
	// without a flag).
	diff := func(a, b string) (int, string, string) {
		return runCLI(t, "diff", "--dir", dir, "--session", a, "--against-session", b, "--fail-slower", "50")
	}
	code, out, errOut := diff(ids[0], ids[1])
	if code != 1 || !strings.Contains(errOut, "compile compile compile.key=k") || !strings.Contains(errOut, "(changed) median 20ms → 40ms (+100%)") ||
		strings.Contains(errOut, "observed") || strings.Contains(errOut, "marks") {
		t.Errorf("diff run 1 run 2 --fail-slower 50: exit %d, stderr %q; want exit 1 naming the compiles alone", code, errOut)
	}
	// The one difference is k0's artifact; the ports are ignored.
	if strings.Count(out, "\n~") != 1 || !strings.Contains(out, "artifact.bytes: 200 → 300") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("diff run 1 run 2: want k0's artifact the one difference, and a line of verdict:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, "left out, as they name a connection or a listener") || !strings.Contains(out, "network.peer.port, server.port") ||
		strings.Contains(out, "server.port: ") || strings.Contains(out, "network.peer.port: ") {
		t.Errorf("diff run 1 run 2: want the ports left out, and said so:\n%s", out)
	}
	if _, out, _ := runCLI(t, "diff", "--dir", dir, "--session", ids[0], "--against-session", ids[1], "--all-attributes"); !strings.Contains(out, "server.port: ") {
		t.Errorf("with --all-attributes, the ports each run listened on are differences:\n%s", out)
	}
	if strings.Contains(out, "B took more") {
		t.Errorf("diff printed its verdict on stdout: %s", out)
	}

	// The report of run 2 agrees: its compile table says which records
	// did the work (the ten cost counts redone) and which found it done
	// (the hits), and its compiles that did the work took what diff says.
	html := mustRun(t, "report", "--dir", dir, "--session", ids[1])
	compiles, _, _ := strings.Cut(html[strings.Index(html, `id="kind-0"`):], `id="kind-1"`) // kinds in order: compile, marks
	if c, o := strings.Count(compiles, "<td>changed</td>"), strings.Count(compiles, "<td>hit</td>"); c != serverKeys || o != requests-serverKeys {
		t.Errorf("report of run 2: %d compiles changed, %d observed; cost says %d redone, and %d hits a run", c, o, serverKeys, requests-serverKeys)
	}
	if n := strings.Count(compiles, `<td class="n">40ms</td><td class="name">compile</td><td>changed</td>`); n != serverKeys {
		t.Errorf("report of run 2: %d compiles that did the work took 40ms; diff says all %d did", n, serverKeys)
	}

	// Runs as fast as one another never trip it, however their hits and
	// requests vary: each run is compared with the one before.
	prev := ids[1]
	for run := 3; run <= 6; run++ {
		serverRun(t, dir, fmt.Sprint("run ", run), slow, 300, serverRequests)
		ids = serverSessions(t, dir)
		cur := ids[len(ids)-1]
		if code, out, errOut := diff(prev, cur); code != 0 || errOut != "" {
			t.Errorf("diff of run %d with run %d, as fast: exit %d, stderr %q\n%s", run-1, run, code, errOut, out)
		}
		prev = cur
	}
}
