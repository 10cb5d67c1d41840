package collector

// The fleet's records in the backend it runs (issue 34), run for real:
// programs send to two otelcol-records gateways, each running the records
// processor (recording into a store of its own as well) and handing what
// changed to one Jaeger; `records pull` reads the sessions back from
// Jaeger, and the answers on the pulled store are the answers on the
// gateways' own stores.

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/collector/internal/jaegertest"
)

// startJaeger starts the Jaeger of OTELRECORDS_JAEGER (.ci/setup-jaeger
// builds it), or skips the test; it returns the query service's URL and
// the OTLP gRPC endpoint.
func startJaeger(t *testing.T) (query, otlp string) {
	t.Helper()
	j := jaegertest.Start(t)
	return j.Query, j.OTLP
}

// gatewayConfig is a gateway: OTLP in, the records processor recording
// into dir, the OTLP exporter to Jaeger.
func gatewayConfig(dir, jaeger, keepBy string) string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%%[1]d
      grpc:
        endpoint: 127.0.0.1:%%[2]d
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 512
  records:
    directory: %s
    keep_by: %s
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [memory_limiter, records]
      exporters: [otlp_grpc]
`, dir, keepBy, jaeger)
}

// records runs the records command and returns its output, failing the
// test unless it exits 0.
func records(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, code := recordsCode(t, bin, args...)
	if code != 0 {
		t.Fatalf("records %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// recordsCode runs the records command and returns its output and exit
// code.
func recordsCode(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("records %s: %v", strings.Join(args, " "), err)
	return "", 0
}

func TestFleetThroughJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Jaeger, two gateways and Node.js")
	}
	query, otlp := startJaeger(t)
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
	tmp := t.TempDir()
	storeA, storeB, storeC, pulled := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "c"), filepath.Join(tmp, "pulled")
	pa, pb, pc := freePorts(t), freePorts(t), freePorts(t)
	ga := startAt(t, bins["otelcol"], gatewayConfig(storeA, otlp, "session"), pa)
	gb := startAt(t, bins["otelcol"], gatewayConfig(storeB, otlp, "session"), pb)
	// A third keeps by trace, as a server's gateway does.
	gc := startAt(t, bins["otelcol"], gatewayConfig(storeC, otlp, "trace"), pc)

	// A warm run sends nothing to Jaeger; a run on each gateway changes
	// something.
	runNode(t, ga.url, "RUN=warm")()
	time.Sleep(time.Second)
	if out := records(t, bins["records"], "--dir", pulled, "pull", "--from", query, "--insecure"); !strings.Contains(out, "0 sessions") {
		t.Errorf("after a warm run, pull said %q: the warm run reached Jaeger", out)
	}
	runNode(t, ga.url, "RUN=changed")()
	runNode(t, gb.url, "RUN=changed", "SPLIT=1")()
	runNode(t, gc.url, "RUN=changed")()
	ga.stop(t)
	gb.stop(t)
	gc.stop(t)

	var out string
	for range 50 {
		out = records(t, bins["records"], "--dir", pulled, "pull", "--from", query, "--insecure")
		if rows := jsonLines[sessionLine](t, bins["records"], pulled, "sessions", "--json"); len(rows) == 3 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("pull: %s", strings.TrimSpace(out))
	rowsA := jsonLines[sessionLine](t, bins["records"], storeA, "sessions", "--json")
	rowsB := jsonLines[sessionLine](t, bins["records"], storeB, "sessions", "--json")
	if len(rowsA) != 1 || len(rowsB) != 1 {
		t.Fatalf("gateway stores hold %d and %d sessions, want 1 each (the warm run none)", len(rowsA), len(rowsB))
	}
	if rowsC := jsonLines[sessionLine](t, bins["records"], storeC, "sessions", "--json"); len(rowsC) != 1 {
		t.Fatalf("the gateway keeping by trace holds %d sessions, want 1", len(rowsC))
	}
	a, b := fmt.Sprint(rowsA[0].ID), fmt.Sprint(rowsB[0].ID)
	// The same store, record for record: the pulled one and the three
	// gateways' read as one (the one that keeps by trace among them).
	all := []string{"--dir", storeA, "--dir", storeB, "--dir", storeC}
	if got, want := records(t, bins["records"], "--dir", pulled, "dump", "--json"), records(t, bins["records"], append(all, "dump", "--json")...); got != want {
		t.Errorf("records dump --json of the pulled store:\n%s\nof the gateways' stores:\n%s", got, want)
	}
	for _, q := range [][]string{
		{"why", "artifact", "target=app"},
		// B's run waited a second between its batches (SPLIT): slower,
		// and diff --fail-slower says so (exit 1) on both.
		{"diff", "--session", a, "--against-session", b, "--fail-slower", "1000"},
		{"report", "--session", a},
	} {
		got, gotCode := recordsCode(t, bins["records"], append([]string{"--dir", pulled}, q...)...)
		want, wantCode := recordsCode(t, bins["records"], append(slices.Clone(all), q...)...)
		got = strings.ReplaceAll(got, pulled, "STORE")
		want = strings.ReplaceAll(strings.ReplaceAll(want, storeA+" + "+storeB+" + "+storeC, "STORE"), storeA, "STORE")
		if got != want || gotCode != wantCode {
			t.Errorf("exit %d and %d", gotCode, wantCode)
			t.Errorf("records %s on the pulled store:\n%s\non the gateways' stores:\n%s", strings.Join(q, " "), cut(got), cut(want))
		}
	}
}

func cut(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}
