package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"

	"github.com/otelrecords/otelrecords/collector/internal/jaegertest"
)

// asCollector, in a child's environment, makes this test binary the
// Collector: main runs with the child's arguments. The tests run
// otelcol-records as a user does — a process with a configuration file,
// logging to its standard error — without building it again.
const asCollector = "OTELCOL_RECORDS_TEST_AS_COLLECTOR"

func TestMain(m *testing.M) {
	if os.Getenv(asCollector) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// collectorProc is an otelcol-records process.
type collectorProc struct {
	name string
	cmd  *exec.Cmd
	log  *jaegertest.Log
	done chan struct{}
	err  error // once done is closed
}

// startCollector starts otelcol-records with the configuration files
// config makes, HOME in dir (for ${env:HOME}), and waits until it says it
// is ready and listens on every port config names. The test's cleanup
// kills it if it still runs.
//
// The ports of a configuration are free when config picks them, but
// another process on the machine (a parallel test, another CI job) can
// bind one before the Collector does; the Collector then exits with
// "address already in use", and startCollector asks config again for
// fresh ports, up to three times, rather than failing on a race that is
// not the Collector's.
func startCollector(t *testing.T, name, dir string, config func() (files []string, listens []int)) *collectorProc {
	t.Helper()
	for try := 1; ; try++ {
		files, listens := config()
		p, err := launchCollector(t, name, dir, files, listens)
		if err == nil {
			return p
		}
		if try < 3 && strings.Contains(p.log.String(), "address already in use") {
			t.Logf("%s: a port of its configuration was taken before it bound it; again on fresh ports", name)
			continue
		}
		t.Fatal(err)
	}
}

// launchCollector starts one otelcol-records process and waits until it
// is ready; it returns an error (with the process's log) if the process
// exits first.
func launchCollector(t *testing.T, name, dir string, files []string, listens []int) (*collectorProc, error) {
	t.Helper()
	var args []string
	for _, f := range files {
		args = append(args, "--config", f)
	}
	p := &collectorProc{name: name, cmd: exec.Command(os.Args[0], args...), log: &jaegertest.Log{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), asCollector+"=1", "HOME="+dir)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.log.String(), "Everything is ready") {
		select {
		case <-p.done:
			return p, fmt.Errorf("%s: otelcol-records exited (%v) before it was ready:\n%s", name, p.err, p.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: otelcol-records was not ready in 2 minutes:\n%s", name, p.log)
		}
	}
	for _, port := range listens {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("%s: ready, but nothing listens on %d, a port of its configuration: %v\n%s", name, port, err, p.log)
		}
		c.Close()
	}
	return p, nil
}

// stop ends the Collector as an operator does, with SIGTERM, and checks
// it exits 0.
func (p *collectorProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: otelcol-records did not exit within a minute of SIGTERM:\n%s", p.name, p.log)
	}
	if p.err != nil {
		t.Errorf("%s: otelcol-records: %v\n%s", p.name, p.err, p.log)
	}
}

// kill ends the Collector with SIGKILL: nothing of it runs after.
func (p *collectorProc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// complaints returns the lines of the Collector's log above info: a
// warning (a deprecated alias, a TLS handshake that failed), an error
// ("Exporting failed. Dropping data").
func (p *collectorProc) complaints() []string {
	var out []string
	for line := range strings.Lines(p.log.String()) {
		f := strings.Split(line, "\t")
		if len(f) > 1 && f[1] != "info" && f[1] != "debug" {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// metrics checks the Collector serves its own metrics on port, the one
// its configuration names.
func (p *collectorProc) metrics(t *testing.T, port int) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("%s: its own metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "otelcol_") {
		t.Fatalf("%s: its own metrics on %d: %s\n%.500s", p.name, port, resp.Status, b)
	}
}

// plaintextOTLP serves OTLP over plaintext gRPC on a free loopback port
// until the test ends, answering success to every batch, and returns its
// address.
func plaintextOTLP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(srv, &acceptAll{})
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

// acceptAll is an OTLP trace service that takes every batch.
type acceptAll struct {
	ptraceotlp.UnimplementedGRPCServer
}

func (*acceptAll) Export(context.Context, ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	return ptraceotlp.NewExportResponse(), nil
}

// TestShippedConfigsStartClean starts otelcol-records on every
// configuration the repository shows (its files, and the YAML blocks of
// the documents), each rewritten only where it
// listens, sends and writes, and reads its log from start to shutdown:
// no warning, no error — a deprecated component name (`"otlp" alias is
// deprecated; use "otlp_grpc"`) fails it. Each configuration file runs
// twice at once, as two gateways on one host do: every port one binds is
// one its configuration names (the Collector's own metrics, whose
// default is 8888, too), so a second one is given ports of its own.
func TestShippedConfigsStartClean(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Collector on every shipped configuration")
	}
	// A backend that speaks OTLP over plaintext gRPC, as Jaeger's OTLP
	// receiver does by default: the OTLP exporter dials it at start, and
	// a configuration that talks TLS to it logs its failed handshakes.
	backend := plaintextOTLP(t)
	for _, c := range shippedConfigs(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			copies := 1
			if c.file {
				copies = 2
			}
			var procs []*collectorProc
			var metrics []int
			for i := range copies {
				dir := t.TempDir()
				var r rewritten
				p := startCollector(t, fmt.Sprintf("%s #%d", c.name, i+1), dir, func() ([]string, []int) {
					var files []string
					files, r = c.files(t, dir, backend)
					if r.metrics == 0 {
						t.Fatalf("%s names no port for the Collector's own metrics (service::telemetry::metrics::readers): it binds localhost:8888, and a second Collector on the host cannot start", c.name)
					}
					return files, r.listens
				})
				procs = append(procs, p)
				metrics = append(metrics, r.metrics)
			}
			for i, p := range procs {
				p.metrics(t, metrics[i])
			}
			for _, p := range procs {
				p.stop(t)
				if bad := p.complaints(); len(bad) > 0 {
					t.Errorf("%s logged above info:\n%s", p.name, strings.Join(bad, "\n"))
				}
			}
		})
	}
}
