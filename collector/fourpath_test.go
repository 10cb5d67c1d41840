package collector

// One program, four paths, one answer (issue 43): a Go HTTP server
// (internal/cacheserver: otelhttp, a cache per instance, lookups that hit
// and miss in the shapes servers write), run as three instances, two on
// one "host" and one on another, each recording every span at once
//
//	(a) in process, by exporter.New, into a store of its own;
//	(b) through otelcol-records and its records exporter (one gateway
//	    for every instance);
//	(c) through the records processor (a gateway per host) into Jaeger,
//	    and back into one store by `records pull`;
//	(d) the processor gateways' own stores, read together (--dir C1
//	    --dir C2): the fleet read as it was recorded, store by store;
//
// and, keeping by trace as a server would, (a) to (d) again (the
// processor gateways keeping by trace hand Jaeger what they keep, and the
// tallies of what they let go: issue 46). Every path
// must hold the same records, and `why`, `cost`, `diff` and the report
// must say the same thing on each — and the truth: what the server
// counted, per key, of its own hits and misses. Subtests say which part
// holds: agree/a=b/dump, truth/c/why, ...
//
// What may differ between paths, by design: a session's id and the
// instant it names (each recorder draws its own; a gateway places a
// sender's session when its first spans arrive), and so each record's
// offset from it, and the numbers of its seqs (in process every span
// started takes one). Nothing else: the same records, field for field,
// stamped in the same order, at the same times from the session's first
// record. (The stamp order is a known-wrong check until the importer
// stamps concurrent traces in the order they started: knownWrongChecks.)

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fourPathStep is one request of the workload: to instance inst, at
// once n times (n > 1: concurrent requests for one key).
type fourPathStep struct {
	inst   int
	method string
	path   string
	n      int
}

// fourPathWorkload is what the two instances are asked, in order. Keys
// k1..k3 are looked up in the first shape (the lookup is changed on a
// miss), p1 in the second (an observed lookup encloses a changed
// compute). What each instance did is what it counts, not this list.
var fourPathWorkload = []fourPathStep{
	// A changed lookup, then observed lookups of the key: hits.
	{0, "GET", "/get?key=k1", 1}, {0, "GET", "/get?key=k1", 1}, {0, "GET", "/get?key=k1", 1},
	// Two requests compute k2 at once: raced, not forgotten.
	{0, "GET", "/get?key=k2&race=2", 2}, {0, "GET", "/get?key=k2", 1},
	// The cache loses k3 (evicted): the next lookup is forgotten, truly.
	{0, "GET", "/get?key=k3", 1}, {0, "POST", "/evict?key=k3", 1}, {0, "GET", "/get?key=k3", 1}, {0, "GET", "/get?key=k3", 1},
	// An observed lookup enclosing a changed compute: a miss, then a hit.
	{0, "GET", "/render?key=p1", 1}, {0, "GET", "/render?key=p1", 1},
	// Another instance, on another host, with a cache of its own: its
	// first misses are new there, not lost by a cache.
	{1, "GET", "/get?key=k1", 1}, {1, "GET", "/get?key=k1", 1},
	{1, "GET", "/get?key=k2", 1}, {1, "GET", "/get?key=k2", 1},
	{1, "GET", "/render?key=p1", 1}, {1, "GET", "/render?key=p1", 1},
	// Another instance on the first one's host: another cache all the
	// same, for k3 too, which only the first instance computed before.
	{2, "GET", "/get?key=k1", 1}, {2, "GET", "/get?key=k1", 1},
	{2, "GET", "/get?key=k3", 1}, {2, "GET", "/get?key=k3", 1},
}

// fourPathServiceVersion is the service.version the cacheservers say.
const fourPathServiceVersion = "1.0.0"

// fourPathInstances are the instances: service.instance.id, host.name,
// and the processor gateway of their host they send to. The third shares
// the first's host, not its cache.
var fourPathInstances = []struct {
	id, host string
	gateway  int
}{{"cache-1", "host-a", 0}, {"cache-2", "host-b", 1}, {"cache-3", "host-a", 0}}

// sessionIDSpread is how much later than another a session must start
// to sort after it on every path: a session id is its start with 24
// random low bits (docs/FORMAT.md §4.1, recorder.IDRandomBits), and a
// gateway starts a sender's session when its first spans arrive. Sessions
// that start closer sort in either order — and then so do the answers
// that follow time across sessions ("new", "another instance").
const sessionIDSpread = time.Duration(1<<24) + time.Millisecond

// cacheServer is a running cacheserver process.
type cacheServer struct {
	url    string
	cmd    *exec.Cmd
	stdout *bufio.Reader
	log    *lockedBuffer
}

// startCacheServer starts the workload server with args and waits for
// the address it serves on.
func startCacheServer(t *testing.T, bin string, args ...string) *cacheServer {
	t.Helper()
	s := &cacheServer{log: &lockedBuffer{}}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stderr = s.log
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	s.stdout = bufio.NewReader(out)
	line, err := s.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("cacheserver %v: %v\n%s", args, err, s.log)
	}
	s.url = strings.TrimSpace(line)
	return s
}

// flush returns once every span the server ended is in every store and
// acknowledged by every Collector it sends to.
func (s *cacheServer) flush(t *testing.T) {
	t.Helper()
	resp, err := http.Post(s.url+"/flush", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cacheserver /flush: %s: %s", resp.Status, b)
	}
}

// stop ends the server with SIGTERM and returns what it counted.
func (s *cacheServer) stop(t *testing.T) serverTruth {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	b, err := io.ReadAll(s.stdout)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("cacheserver: %v\n%s", err, s.log)
	}
	var truth serverTruth
	if err := json.Unmarshal(b, &truth); err != nil {
		t.Fatalf("cacheserver printed %q: %v\n%s", b, err, s.log)
	}
	if truth.ExportFailures != 0 {
		t.Fatalf("cacheserver %s: %d spans failed to export over OTLP: a path was not given every span\n%s", truth.Instance, truth.ExportFailures, s.log)
	}
	return truth
}

// serverTruth is what a cacheserver counted (its main.go's truth).
type serverTruth struct {
	Instance       string               `json:"instance"`
	Host           string               `json:"host"`
	Keys           map[string]keyCounts `json:"keys"`
	ExportFailures int64                `json:"export_failures"`
}

// keyCounts is what a cacheserver counted of one key.
type keyCounts struct {
	Hits    int `json:"hits"`
	Misses  int `json:"misses"`
	Raced   int `json:"raced"`
	Evicted int `json:"evicted"`
}

// do sends the workload's requests in order.
func (w fourPathStep) do(t *testing.T, servers []*cacheServer) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, w.n)
	for range w.n {
		wg.Go(func() {
			req, err := http.NewRequest(w.method, servers[w.inst].url+w.path, nil)
			if err != nil {
				errs <- err
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("%s %s: %s: %s", w.method, w.path, resp.Status, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("instance %d: %v", w.inst, err)
	}
}

// exporterGateway is a gateway with the records exporter, recording both
// as a build would (keep_by session, into dir) and as a server would
// (keep_by trace, into traceDir).
func exporterGateway(dir, traceDir string) string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%%d
exporters:
  records/session:
    directory: %s
  records/trace:
    directory: %s
    keep_by: trace
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [records/session, records/trace]
`, dir, traceDir)
}

// fourPathStore is where one path's records are read: the stores a
// records command is given with --dir.
type fourPathStore struct {
	name    string // its subtests' name
	about   string // what it is, for messages
	dirs    []string
	byTrace bool
}

func (s fourPathStore) args(args ...string) []string {
	var out []string
	for _, d := range s.dirs {
		out = append(out, "--dir", d)
	}
	return append(out, args...)
}

func TestOneAnswerOnFourPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs two servers, three gateways and Jaeger")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	jaeger := os.Getenv("OTELRECORDS_JAEGER") != ""
	var query, otlp string
	if jaeger {
		query, otlp = startJaeger(t)
	}
	tmp := t.TempDir()
	dir := func(name string) string { return filepath.Join(tmp, name) }

	x := startCollectorConfig(t, bins["otelcol"], exporterGateway(dir("b"), dir("bt")))
	var procs [2]*collectorProc // a processor gateway per host
	// and one per host keeping by trace, into a Jaeger of its own
	var traceProcs [2]*collectorProc
	var traceQuery string
	if jaeger {
		for i := range procs {
			procs[i] = startAt(t, bins["otelcol"], gatewayConfig(dir(fmt.Sprint("c", i+1)), otlp, "session"), freePorts(t))
		}
		var traceOTLP string
		traceQuery, traceOTLP = startJaeger(t)
		for i := range traceProcs {
			traceProcs[i] = startAt(t, bins["otelcol"], gatewayConfig(dir(fmt.Sprint("ct", i+1)), traceOTLP, "trace"), freePorts(t))
		}
	}
	servers := make([]*cacheServer, len(fourPathInstances))
	for i, in := range fourPathInstances {
		endpoints := []string{strings.TrimSuffix(strings.TrimPrefix(x.url, "http://"), "/v1/traces")}
		if jaeger {
			for _, p := range []*collectorProc{procs[in.gateway], traceProcs[in.gateway]} {
				endpoints = append(endpoints, strings.TrimSuffix(strings.TrimPrefix(p.url, "http://"), "/v1/traces"))
			}
		}
		servers[i] = startCacheServer(t, bins["cacheserver"], "-instance", in.id, "-host", in.host, "-version", fourPathServiceVersion,
			"-store", dir(fmt.Sprint("a", i+1)), "-store-trace", dir(fmt.Sprint("at", i+1)), "-otlp", strings.Join(endpoints, ","))
	}
	for i, step := range fourPathWorkload {
		if i > 0 && step.inst != fourPathWorkload[i-1].inst {
			// The next instance starts once every path has placed the
			// previous one's session, and later than ids tell apart.
			servers[fourPathWorkload[i-1].inst].flush(t)
			time.Sleep(sessionIDSpread)
		}
		step.do(t, servers)
	}
	truth := map[string]serverTruth{}
	for _, s := range servers {
		tr := s.stop(t)
		truth[tr.Instance] = tr
	}
	x.stop(t)
	checkLog(t, "the exporter gateway", x)

	var inProcess, inProcessByTrace []string
	for i := range fourPathInstances {
		inProcess, inProcessByTrace = append(inProcess, dir(fmt.Sprint("a", i+1))), append(inProcessByTrace, dir(fmt.Sprint("at", i+1)))
	}
	paths := []fourPathStore{
		{name: "a", about: "(a) in process", dirs: inProcess},
		{name: "b", about: "(b) exporter", dirs: []string{dir("b")}},
	}
	byTrace := []fourPathStore{
		{name: "a-trace", about: "(a) in process, by trace", dirs: inProcessByTrace, byTrace: true},
		{name: "b-trace", about: "(b) exporter, by trace", dirs: []string{dir("bt")}, byTrace: true},
	}
	if jaeger {
		for i, p := range append(procs[:], traceProcs[:]...) {
			p.stop(t)
			checkLog(t, fmt.Sprint("processor gateway ", i+1), p)
		}
		// The processor gateways have handed Jaeger every span before
		// they ended; Jaeger may take a moment to answer queries for them.
		pullAll := func(pulled, query string) {
			var out string
			for range 50 {
				out = records(t, bins["records"], "--dir", pulled, "pull", "--from", query, "--insecure")
				if len(recordsJSON(t, bins["records"], []string{"--dir", pulled, "sessions", "--json"})) == len(servers) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Logf("pull: %s", strings.TrimSpace(out))
		}
		pullAll(dir("pulled"), query)
		pullAll(dir("pulled-trace"), traceQuery)
		paths = append(paths,
			fourPathStore{name: "c", about: "(c) processor, Jaeger, pull", dirs: []string{dir("pulled")}},
			fourPathStore{name: "d", about: "(d) processor gateways' stores", dirs: []string{dir("c1"), dir("c2")}})
		byTrace = append(byTrace,
			fourPathStore{name: "c-trace", about: "(c) processor by trace, Jaeger, pull", dirs: []string{dir("pulled-trace")}, byTrace: true},
			fourPathStore{name: "d-trace", about: "(d) processor gateways' stores, by trace", dirs: []string{dir("ct1"), dir("ct2")}, byTrace: true})
	}

	checkTruth(t, truth)
	knownWrongSeen.Clear()
	t.Cleanup(func() { logKnownWrong(t) })
	answers := map[string]*fourPathAnswers{}
	for _, p := range append(paths, byTrace...) {
		answers[p.name] = readAnswers(t, bins["records"], p, truth)
	}
	// Subtests, so that what agrees and what is true show view by view:
	// agree/a=b/why, truth/c/cost, ...
	for _, group := range [][]fourPathStore{paths, byTrace} {
		// Each path against the one before it: in process against the
		// exporter, the exporter against the processor's pulled store,
		// that against the processor gateways' own.
		for i, p := range group[1:] {
			t.Run("agree/"+group[i].name+"="+p.name, func(t *testing.T) { compareAnswers(t, answers[group[i].name], answers[p.name]) })
		}
		for _, p := range group {
			t.Run("truth/"+p.name, func(t *testing.T) { checkAnswers(t, answers[p.name], truth) })
		}
	}
	if !jaeger {
		t.Skip("paths (a) and (b) compared; (c) and (d) need Jaeger: OTELRECORDS_JAEGER=$(.ci/setup-jaeger) go test ./collector -run FourPaths")
	}
	// The pulled store is the processor gateways' stores, byte for byte
	// (issue 34): (c) and (d) print the same dump, session ids and all.
	for _, cd := range [][2]fourPathStore{{paths[2], paths[3]}, {byTrace[2], byTrace[3]}} {
		c, d := cd[0], cd[1]
		t.Run("agree/"+c.name+"="+d.name+"/bytes", func(t *testing.T) {
			if got, want := records(t, bins["records"], c.args("dump", "--json")...), records(t, bins["records"], d.args("dump", "--json")...); got != want {
				t.Errorf("records dump --json of %s:\n%s\nof %s:\n%s", c.about, cut(got), d.about, cut(want))
			}
			if got, want := tallyParts(t, c.dirs), tallyParts(t, d.dirs); !maps.Equal(got, want) {
				t.Errorf("the tallies of %s:\n%v\nof %s:\n%v", c.about, got, d.about, want)
			}
		})
	}
}

// checkLog fails the test on an error a gateway logged (an export that
// failed, spans dropped), and shows its warnings.
func checkLog(t *testing.T, name string, p *collectorProc) {
	t.Helper()
	for line := range strings.Lines(p.log.String()) {
		switch {
		case strings.Contains(line, "\terror\t"):
			t.Errorf("%s logged an error: %s", name, line)
		case strings.Contains(line, "\twarn\t"):
			t.Logf("%s warned: %s", name, line)
		}
	}
}

// checkTruth checks the workload did what it was meant to: the server
// counted a race on k2 and an eviction of k3, and every key both hit and
// missed, so the answers below are held to something.
func checkTruth(t *testing.T, truth map[string]serverTruth) {
	t.Helper()
	first := truth[fourPathInstances[0].id].Keys
	if first["k2"].Raced != 1 || first["k3"].Evicted != 1 {
		t.Fatalf("the workload did not race k2 once and lose k3 once: %+v", first)
	}
	for _, in := range fourPathInstances {
		for key, c := range truth[in.id].Keys {
			if c.Hits == 0 || c.Misses == 0 {
				t.Fatalf("%s: %s hit %d times and missed %d: want both", in.id, key, c.Hits, c.Misses)
			}
		}
	}
}
