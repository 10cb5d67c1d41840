//go:build bench

package peers

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// otelcolFlag names a built cmd/otelcol-peers (bench/run builds it once
// for every round); without it the first benchmark or test builds one.
var otelcolFlag = flag.String("otelcol", "", "the otelcol-peers binary (default: built from ./cmd/otelcol-peers)")

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// otelcolBinary returns the distribution to run, building it the first time
// when -otelcol names none.
func otelcolBinary(t testing.TB) string {
	t.Helper()
	if *otelcolFlag != "" {
		return *otelcolFlag
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "otelcol-peers")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "otelcol-peers")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/otelcol-peers")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/otelcol-peers: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// pipeline is one Collector configuration: the OTLP receiver, then
// processors, then one exporter; receiver straight to exporter when
// there is no processor, and no batch processor, so that a request's
// reply means an exporter had its spans (or a processor its decision).
type pipeline struct {
	processors []string
	exporter   string
	downstream string // the otlphttp exporter's endpoint; a closed port when empty
}

// config is the Collector's configuration for p on port, its store, its
// processors' state and file in dir. Every component of the distribution is configured; only
// p's are built. The processors: records keeps by trace (what a tail
// sampler keeps), records/session by session (the README's default);
// tail_sampling keeps the traces with a span whose records.effect is
// changed — the policy a user would write for "keep what changed" — and
// decides one second after a trace's first span, its shortest useful
// wait for spans that arrive in one request.
func (p pipeline) config(port int, dir string) string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  records:
    keep_by: trace
    state_directory: %s
  records/session:
    state_directory: %s
  tail_sampling:
    decision_wait: 1s
    policies:
      - name: changed
        type: string_attribute
        string_attribute: {key: records.effect, values: [changed]}
exporters:
  nop:
  records:
    directory: %s
  file:
    path: %s
    format: proto
  otlphttp:
    endpoint: %s
    compression: none
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [%s]
      exporters: [%s]
`, port, filepath.Join(dir, "state"), filepath.Join(dir, "state-session"), filepath.Join(dir, "store"), filepath.Join(dir, "spans.pb"), p.downstreamURL(), strings.Join(p.processors, ", "), p.exporter)
}

// downstreamURL is the otlphttp exporter's endpoint: p's, or the discard
// port when the pipeline does not use it (the exporter is configured in
// every pipeline's file, built only in those that name it).
func (p pipeline) downstreamURL() string {
	if p.downstream == "" {
		return "http://127.0.0.1:9"
	}
	return p.downstream
}

// collectorProc is a running otelcol-peers.
type collectorProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited
	err  error         // how it exited, once done
	url  string        // OTLP/HTTP traces
	dir  string        // its store and file
	log  string        // its stdout and stderr
}

// start runs the distribution with p and waits until it listens.
func start(t testing.TB, p pipeline) *collectorProc {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(p.config(port, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &collectorProc{url: fmt.Sprintf("http://127.0.0.1:%d/v1/traces", port), dir: dir, log: filepath.Join(dir, "log")}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	c.cmd = exec.Command(otelcolBinary(t), "--config", cfg)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if os.Getenv("OTELRECORDS_CACHE_DIR") == "" {
		// The sound cache of the stores it opens goes with the run (as
		// bench/run's does), not into the user's ~/.cache/otelrecords.
		c.cmd.Env = append(os.Environ(), "OTELRECORDS_CACHE_DIR="+filepath.Join(dir, "cache"))
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.done = make(chan struct{})
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.cmd.Process.Kill(); <-c.done })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			conn.Close()
		}
		// The Collector listens, then logs that it is ready, and only then
		// takes SIGTERM for a graceful shutdown (otelcol's Run): a stop in
		// between killed it (once, in a round's probe of one op). Wait for
		// the line, and a moment past it.
		if err == nil && strings.Contains(c.logText(), "Everything is ready") {
			time.Sleep(100 * time.Millisecond)
			return c
		}
		select {
		case <-c.done:
			t.Fatalf("otelcol-peers exited: %v\n%s", c.err, c.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("otelcol-peers did not listen on %d: %v\n%s", port, err, c.logText())
		}
	}
}

func (c *collectorProc) logText() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// stop ends the Collector as an operator does, with SIGTERM, and returns
// the CPU it used in all, in nanoseconds: its pipeline shut down
// (pending traces decided, files flushed, the store closed) included.
func (c *collectorProc) stop(t testing.TB) int64 {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
	if c.err != nil {
		t.Fatalf("otelcol-peers: %v\n%s", c.err, c.logText())
	}
	return int64(c.cmd.ProcessState.UserTime() + c.cmd.ProcessState.SystemTime())
}

// cpu is the user and system CPU the running Collector has used so far,
// in nanoseconds, read from /proc (in clock ticks of 10 ms).
func (c *collectorProc) cpu(t testing.TB) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th of them, in clock ticks (100 a second
	// on Linux).
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * int64(10*time.Millisecond)
}

// client keeps a connection per sender, as an SDK's exporter does.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}, Timeout: time.Minute}

// senders is how many clients send at once.
const senders = 4

// send posts every body to c from senders clients at once, and fails t
// on any request that was not answered 200.
func (c *collectorProc) send(t testing.TB, bodies [][]byte) { c.sendAt(t, bodies, 0) }

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
