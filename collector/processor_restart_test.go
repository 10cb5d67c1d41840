package collector

// The records processor without a directory across a restart (issue
// 44.2): it hands kept sessions on and keeps no records, yet a batch sent
// again after a SIGKILL or a SIGTERM goes downstream once, and the
// sender's later spans continue its session under the same id.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// downstream is an OTLP/gRPC server standing for the backend after the
// processor: it counts every span it is given, by "traceid spanid", and
// the records.session.id of every span, and the spans whose Resource
// does not describe their sender (service.name is not "replayer").
type downstream struct {
	ptraceotlp.UnimplementedGRPCServer
	mu       sync.Mutex
	spans    map[string]int
	sessions map[string]int
	bare     int
	refuse   bool // refuse every batch, as a backend that is down
}

func (d *downstream) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refuse {
		return ptraceotlp.NewExportResponse(), grpcstatus.Error(codes.Unavailable, "downstream is down")
	}
	rss := req.Traces().ResourceSpans()
	for i := range rss.Len() {
		sid, _ := rss.At(i).Resource().Attributes().Get("records.session.id")
		name, _ := rss.At(i).Resource().Attributes().Get("service.name")
		named := name.AsString() == "replayer"
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			for k := range sss.At(j).Spans().Len() {
				s := sss.At(j).Spans().At(k)
				if s.Name() == spanbridge.TallyName {
					continue // a part of a session's tally, handed on as it is rewritten: no record
				}
				d.spans[fmt.Sprintf("%x %x", s.TraceID(), s.SpanID())]++
				d.sessions[sid.AsString()]++
				if !named {
					d.bare++
				}
			}
		}
	}
	return ptraceotlp.NewExportResponse(), nil
}

// startDownstream serves a downstream on a free port of loopback.
func startDownstream(t *testing.T) (*downstream, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &downstream{spans: map[string]int{}, sessions: map[string]int{}}
	s := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(s, d)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return d, l.Addr().String()
}

// processorConfig is a Collector configuration with the records
// processor, its store as store says ("state_directory: path" without a
// directory, "directory: path" with one), in front of the OTLP exporter
// to endpoint (no sending queue and no retries: a batch is handed on, or
// refused, before the receiver answers).
func processorConfig(store, endpoint string) string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%%[1]d
      grpc:
        endpoint: 127.0.0.1:%%[2]d
processors:
  records:
    %s
exporters:
  otlp:
    endpoint: %s
    compression: none
    tls:
      insecure: true
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [records]
      exporters: [otlp]
`, store, endpoint)
}

// A batch B of 100 changed spans through the processor without a
// directory; SIGKILL (and, apart, SIGTERM) 3 s later; a start; B sent
// again, then C, 100 more of the same sender: downstream gets each of B's
// and C's spans once, all of them in one session, on a Resource that
// describes the sender (the session row, handed on again after the
// restart). About 10 s a case.
func TestProcessorRestartHandsOnOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs otelcol-records twice")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"SIGKILL", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			down, endpoint := startDownstream(t)
			cfg := processorConfig("state_directory: "+filepath.Join(t.TempDir(), "state"), endpoint)
			p := freePorts(t)
			col := startAt(t, bins["otelcol"], cfg, p)
			t0 := time.Now()
			b, c := replayBody(1, 100, t0), replayBody(2, 100, t0.Add(time.Second))
			postOK(t, col, b)
			sleepUntil(t0, 3*time.Second)
			if how == "SIGKILL" {
				col.kill()
			} else {
				col.stop(t)
			}
			col = startAt(t, bins["otelcol"], cfg, p)
			postOK(t, col, b)
			postOK(t, col, c)
			col.stop(t)
			down.mu.Lock()
			defer down.mu.Unlock()
			twice := 0
			for _, n := range down.spans {
				if n > 1 {
					twice++
				}
			}
			t.Logf("%s: %d span ids downstream, %d of them more than once, sessions %v, %d without their sender's Resource", how, len(down.spans), twice, down.sessions, down.bare)
			if len(down.spans) != 200 || twice > 0 || len(down.sessions) != 1 || down.bare > 0 {
				t.Errorf("%d span ids downstream (%d more than once) in %d sessions; want 200, each once, in 1", len(down.spans), twice, len(down.sessions))
			}
		})
	}
}

// The records processor with a directory, downstream down: a batch B is
// refused (the sender told it failed), then SIGKILL; a start with
// downstream back, B sent again, then C: downstream gets each of B's and
// C's spans once, and the store holds them once. Stored before it was
// handed on, B was found stored after the restart and never handed on.
func TestProcessorWithADirectoryHandsOnAfterACrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs otelcol-records twice")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	down, endpoint := startDownstream(t)
	dir := filepath.Join(t.TempDir(), "records")
	cfg := processorConfig("directory: "+dir, endpoint)
	p := freePorts(t)
	col := startAt(t, bins["otelcol"], cfg, p)
	t0 := time.Now()
	b, c := replayBody(1, 100, t0), replayBody(2, 100, t0.Add(time.Second))
	down.mu.Lock()
	down.refuse = true
	down.mu.Unlock()
	resp, err := http.Post(col.url, "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("B told stored while downstream refused it\n%s", col.log)
	}
	col.kill()
	down.mu.Lock()
	down.refuse = false
	down.mu.Unlock()
	col = startAt(t, bins["otelcol"], cfg, p)
	postOK(t, col, b)
	postOK(t, col, c)
	col.stop(t)
	down.mu.Lock()
	twice := 0
	for _, n := range down.spans {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d span ids downstream, %d of them more than once", len(down.spans), twice)
	if len(down.spans) != 200 || twice > 0 {
		t.Errorf("%d span ids downstream (%d more than once); want 200, each once", len(down.spans), twice)
	}
	down.mu.Unlock()
	stored, _ := storedIDs(t, dir)
	if len(stored) != 200 {
		t.Errorf("%d span ids stored, want 200", len(stored))
	}
	for id, n := range stored {
		if n > 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
}
