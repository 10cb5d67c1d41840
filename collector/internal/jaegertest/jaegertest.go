// Package jaegertest starts a real Jaeger for the Collector's tests: the
// binary .ci/setup-jaeger builds (Jaeger v2, the version tools/go.mod
// pins), named by OTELRECORDS_JAEGER, as its all-in-one configuration
// cut to what a test needs — OTLP in, in-memory storage, the query
// service — with every listener on a free loopback port of its own (other
// collectors on the machine may hold the defaults, 4317, 4318, 16686),
// no metrics endpoint, and no traces of its own.
package jaegertest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Env names the Jaeger binary; .ci/setup-jaeger prints its path.
const Env = "OTELRECORDS_JAEGER"

// config is the Jaeger configuration; its %d are the ports of the health
// check, the query service's HTTP and gRPC, and the OTLP receiver's gRPC
// and HTTP.
const config = `
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%d
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// Jaeger is a running Jaeger: where to send spans, and where to ask for
// them.
type Jaeger struct {
	// Query is the query service's base URL (its HTTP API and api_v3,
	// what `records pull --from` takes), http://127.0.0.1:PORT.
	Query string
	// OTLP is the OTLP gRPC receiver's address, 127.0.0.1:PORT
	// (plaintext).
	OTLP string
}

// Start starts Jaeger, or skips the test when OTELRECORDS_JAEGER names
// none, and waits until it is ready; the test's cleanup stops it.
func Start(t testing.TB) Jaeger {
	t.Helper()
	bin := os.Getenv(Env)
	if bin == "" {
		t.Skipf("needs Jaeger: %s=$(.ci/setup-jaeger) go test ...", Env)
	}
	ports := make([]int, 5)
	for i := range ports {
		ports[i] = FreePort(t)
	}
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, ports[0], ports[1], ports[2], ports[3], ports[4]), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &Log{}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/status", ports[0])); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return Jaeger{Query: fmt.Sprintf("http://127.0.0.1:%d", ports[1]), OTLP: fmt.Sprintf("127.0.0.1:%d", ports[3])}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger was not ready in 60 s:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FreePort returns a loopback TCP port nothing listens on now, for a
// child process to bind later.
//
// It picks from below the kernel's ephemeral range (32768-60999 on
// Linux), not with port 0: a port from that range is also a client
// socket's local port, and any outgoing connection on the machine can
// take it in the moment between our closing it and the child binding it
// (a CI run lost a Collector that way: "bind: address already in use").
// No port is returned twice in one test binary, so parallel tests never
// share one.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// handedOut holds every port FreePort returned in this process.
var handedOut sync.Map

// Log is what a process writes to its standard output and error, which a
// test reads while the process runs.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
