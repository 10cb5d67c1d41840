package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// jaegerEnv names the Jaeger binary the integration tests run;
// .ci/setup-jaeger builds one (Jaeger v1.76.0, from tools/go.mod) and
// prints its path.
const jaegerEnv = "OTELRECORDS_JAEGER"

// jaegerBinary returns the Jaeger binary, or skips the test.
func jaegerBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(jaegerEnv)
	if bin == "" {
		t.Skipf("the Jaeger integration tests need a Jaeger binary: %s=$(.ci/setup-jaeger) go test ./cmd/records -run Jaeger", jaegerEnv)
	}
	return bin
}

// jaegerConfig is Jaeger v2's all-in-one configuration (the one the binary
// uses without --config) cut to what the tests need: OTLP in, the default
// in-memory storage, the query API; every listener on a loopback port of
// its own, chosen free (other collectors on the machine may hold the
// defaults, 4317, 4318, 16686); no metrics endpoint, and no traces of its
// own queries (it would send them to its own OTLP port, and wait 10
// seconds at shutdown for the receiver it has just closed). Its %s are,
// in order, the addresses of the health check, the query service's HTTP
// and gRPC, and the OTLP receiver's gRPC and HTTP.
const jaegerConfig = `
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
      endpoint: %s
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// jaeger is a running Jaeger and its addresses.
type jaeger struct {
	client *http.Client
	log    string

	otlpGRPC, otlpHTTP string // OTLP receivers, host:port
	query              string // the query service's HTTP, host:port
	health             string
}

// queryURL is the query service's address as records pull takes it.
func (j *jaeger) queryURL() string { return "http://" + j.query }

// freePorts returns n loopback addresses whose ports were free a moment
// ago: the kernel picks them, and they are let go for Jaeger to bind.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = l.Addr().String()
		defer l.Close() // held until all are chosen, so none is chosen twice
	}
	return addrs
}

// startJaeger starts Jaeger on loopback ports of its own with in-memory
// storage, waits until it is ready, and stops it (by its pid) when the
// test ends. A port taken between its choice and Jaeger's start (another
// process was quicker) makes Jaeger exit: it is started again on others.
func startJaeger(t testing.TB, bin string) *jaeger {
	t.Helper()
	for attempt := 1; ; attempt++ {
		j, err := tryJaeger(t, bin)
		if err == nil {
			return j
		}
		if attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("jaeger did not start (%v); again on other ports", err)
	}
}

func tryJaeger(t testing.TB, bin string) (*jaeger, error) {
	t.Helper()
	ports := freePorts(t, 5)
	j := &jaeger{client: &http.Client{Timeout: 10 * time.Second}, health: ports[0], query: ports[1], otlpGRPC: ports[3], otlpHTTP: ports[4]}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, ports[0], ports[1], ports[2], ports[3], ports[4]), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	j.log = logFile.Name()
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		// Stop it: SIGTERM, and SIGKILL if it lingers (at once where there
		// is no SIGTERM to send, as on Windows).
		j.client.CloseIdleConnections()
		if !stopped {
			stopping := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				_ = cmd.Process.Kill()
			}
			select {
			case <-exited:
				t.Logf("jaeger stopped in %v", time.Since(stopping).Round(time.Millisecond))
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(j.log); err == nil {
				t.Logf("jaeger's log:\n%s", b)
			}
		}
	})

	begin := time.Now()
	deadline := begin.Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			stopped = true
			b, _ := os.ReadFile(j.log)
			return nil, fmt.Errorf("jaeger exited at start: %v\n%s", err, b)
		default:
		}
		if j.ready() {
			t.Logf("jaeger (pid %d) ready after %v, query service at %s", cmd.Process.Pid, time.Since(begin).Round(time.Millisecond), j.query)
			return j, nil
		}
		if time.Now().After(deadline) {
			t.Fatal("jaeger was not ready within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready reports whether Jaeger's health check says so and both OTLP
// receivers accept connections.
func (j *jaeger) ready() bool {
	resp, err := j.client.Get("http://" + j.health + "/status")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	for _, addr := range []string{j.otlpGRPC, j.otlpHTTP, j.query} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}

func (j *jaeger) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := j.client.Get("http://" + j.query + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
