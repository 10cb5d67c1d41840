package collector

// The end-to-end test of issue 24: a real Node.js program, instrumented
// with the OpenTelemetry JS SDK from npm, sends OTLP/HTTP to a real
// otelcol-records process on loopback, and the records command reads the
// store back.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/collector/internal/jaegertest"
)

// toolsDir holds the programs tools builds; TestMain removes it.
var toolsDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if toolsDir != "" {
		os.RemoveAll(toolsDir)
	}
	os.Exit(code)
}

// tools builds otelcol-records and the records command once for the
// tests of this package, into toolsDir.
var tools = sync.OnceValues(func() (map[string]string, error) {
	dir, err := os.MkdirTemp("", "otelrecords-e2e-")
	if err != nil {
		return nil, err
	}
	toolsDir = dir
	out := map[string]string{"otelcol": filepath.Join(dir, "otelcol-records"), "records": filepath.Join(dir, "records"), "sender": filepath.Join(dir, "otlpsender"),
		"cacheserver": filepath.Join(dir, "cacheserver")}
	// The records command is a module of its own: built from its
	// directory, through the workspace.
	for name, at := range map[string]string{"otelcol": "cmd/otelcol-records", "records": "../cmd/records", "sender": "internal/otlpsender", "cacheserver": "internal/cacheserver"} {
		cmd := exec.Command("go", "build", "-C", at, "-o", out[name], ".")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", at, err, b)
		}
	}
	return out, nil
})

// nodeFixture runs `npm ci` in testdata/node once, and says why the test
// must be skipped when Node.js or npm is not on the machine.
var nodeFixture = sync.OnceValues(func() (skip string, err error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s is not on PATH: the end-to-end test needs Node.js 20 and npm", tool), nil
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = filepath.Join("testdata", "node")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci: %v\n%s", err, b)
	}
	return "", nil
})

// collectorProc is an otelcol-records process recording into dir.
type collectorProc struct {
	url string
	cmd *exec.Cmd
	log *lockedBuffer
}

// lockedBuffer is what a process writes while a test reads.
type lockedBuffer = jaegertest.Log

func freePort(t testing.TB) int { return jaegertest.FreePort(t) }

func startCollector(t *testing.T, bin, dir string) *collectorProc {
	t.Helper()
	return startCollectorConfig(t, bin, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%%d
processors:
  batch:
    timeout: 100ms
  memory_limiter:
    check_interval: 1s
    limit_mib: 256
exporters:
  records:
    directory: %s
    decision_wait: 20s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [memory_limiter, batch]
      exporters: [records]
`, dir))
}

// startCollectorConfig starts otelcol-records with the configuration cfg,
// whose %d is the receiver's port (a free one), and waits until it
// listens.
func startCollectorConfig(t testing.TB, bin, cfg string) *collectorProc {
	t.Helper()
	port := freePort(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, cfg, port), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &collectorProc{url: fmt.Sprintf("http://127.0.0.1:%d/v1/traces", port), log: &lockedBuffer{}}
	p.cmd = exec.Command(bin, "--config", path)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	waitListen(t, p, port)
	return p
}

// waitListen waits until the Collector p listens on port.
func waitListen(t testing.TB, p *collectorProc, port int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("otelcol-records did not listen on %d: %v\n%s", port, err, p.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the Collector as an operator does, with SIGTERM: it shuts its
// pipeline down, and the exporter ends every session.
func (p *collectorProc) stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("otelcol-records: %v\n%s", err, p.log)
	}
}

// runNode starts build.js with env and returns a function that waits for
// it and returns its pid.
func runNode(t *testing.T, url string, env ...string) func() int {
	t.Helper()
	cmd := exec.Command("node", "build.js")
	cmd.Dir = filepath.Join("testdata", "node")
	cmd.Env = append(os.Environ(), append(env, "OTLP_URL="+url)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() int {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("node build.js %v: %v\n%s%s", env, err, out.String(), errOut.String())
		}
		var said struct{ PID int }
		if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &said); err != nil || said.PID != cmd.Process.Pid {
			t.Fatalf("node said %q (%v); its pid is %d", out.String(), err, cmd.Process.Pid)
		}
		return said.PID
	}
}

// jsonLines runs the records command on dir and decodes each line of its
// output into a T.
func jsonLines[T any](t *testing.T, bin, dir string, args ...string) []T {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--dir", dir}, args...)...)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("records %v: %v", args, err)
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("records %v: line %q: %v", args, sc.Text(), err)
		}
		out = append(out, v)
	}
	return out
}

type sessionLine struct {
	ID       uint64                     `json:"id,string"`
	Process  int                        `json:"process"`
	OS       string                     `json:"os"`
	Arch     string                     `json:"arch"`
	Resource map[string]json.RawMessage `json:"resource"`
	Records  map[string]int             `json:"records"`
}

type timelineLine struct {
	Session   uint64  `json:"session,string"`
	Seq       uint64  `json:"seq"`
	ParentSeq *uint64 `json:"parent_seq"`
	Depth     int     `json:"depth"`
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
}

func TestNodeProgramsThroughTheCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test builds a Collector and runs Node.js")
	}
	skip, err := nodeFixture()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	col := startCollector(t, bins["otelcol"], dir)

	warm := runNode(t, col.url, "RUN=warm")()
	changed := runNode(t, col.url, "RUN=changed")()
	a, b := runNode(t, col.url, "RUN=changed"), runNode(t, col.url, "RUN=changed")
	together := []int{a(), b()}
	split := runNode(t, col.url, "RUN=changed", "SPLIT=1")()
	col.stop(t)

	rows := jsonLines[sessionLine](t, bins["records"], dir, "sessions", "--json")
	byPID := map[int]sessionLine{}
	for _, r := range rows {
		byPID[r.Process] = r
	}
	if _, ok := byPID[warm]; ok {
		t.Errorf("the warm run (pid %d) left a session: %+v", warm, byPID[warm])
	}
	for _, pid := range append([]int{changed, split}, together...) {
		r, ok := byPID[pid]
		if !ok {
			t.Fatalf("no session for the changed run of pid %d; sessions: %+v\n%s", pid, rows, col.log)
		}
		if !strings.Contains(string(r.Resource["service.name"]), "node-build") || r.OS != "linux" || r.Arch == "" {
			t.Errorf("session of pid %d does not describe the Node process: %+v", pid, r)
		}
		if r.Records["artifact"] != 1 || r.Records["cache"] != 1 || r.Records["marks"] != 3 {
			t.Errorf("session of pid %d holds %v, want 1 artifact, 1 cache, 3 marks", pid, r.Records)
		}
	}
	if len(rows) != 4 {
		t.Errorf("%d sessions, want 4: one per changed Node process", len(rows))
	}

	for _, pid := range []int{changed, split} {
		lines := jsonLines[timelineLine](t, bins["records"], dir, "timeline", "--json", "--session", fmt.Sprint(byPID[pid].ID))
		got := map[string]string{}
		seqName := map[uint64]string{}
		for _, l := range lines {
			seqName[l.Seq] = l.Name
		}
		for _, l := range lines {
			parent := ""
			if l.ParentSeq != nil {
				parent = seqName[*l.ParentSeq]
				if *l.ParentSeq >= l.Seq {
					t.Errorf("pid %d: %q (seq %d) stamped before its parent (seq %d)", pid, l.Name, l.Seq, *l.ParentSeq)
				}
			}
			got[l.Name] = parent
		}
		want := map[string]string{"build": "", "resolve": "build", "lookup lib": "resolve", "compile": "build", "compile app": "compile"}
		if len(got) != len(want) {
			t.Errorf("pid %d: timeline %v, want %v", pid, got, want)
		}
		for name, parent := range want {
			if p, ok := got[name]; !ok || p != parent {
				t.Errorf("pid %d: %q under %q, want under %q (timeline %v)", pid, name, p, parent, got)
			}
		}
	}
}
