package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// recordBuild records a small build (a mark holding two records, one of
// them changed) into a new store and returns its directory.
func recordBuild(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	rec, err := exporter.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "builder"))))
	tr := tp.Tracer("test")
	ctx, phase := tr.Start(context.Background(), "tune")
	_, s := tr.Start(ctx, "tune matmul", spanbridge.Record("autotune", attribute.String("autotune.key", "matmul"), spanbridge.Changed())...)
	s.End()
	_, s = tr.Start(ctx, "compile matmul", spanbridge.Record("compile")...)
	s.End()
	phase.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// receiver is an OTLP trace receiver: what it was sent, and the headers
// it was sent with.
type receiver struct {
	collectorpb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	spans   []*tracepb.ResourceSpans
	headers []string
}

func (r *receiver) Export(ctx context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.add(req, md.Get("authorization"))
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (r *receiver) add(req *collectorpb.ExportTraceServiceRequest, auth []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, req.ResourceSpans...)
	r.headers = append(r.headers, auth...)
}

// names returns the names of the spans received, sorted, and the
// service.name of each resource.
func (r *receiver) names() (spans, services []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range r.spans {
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				services = append(services, kv.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				spans = append(spans, s.Name)
			}
		}
	}
	slices.Sort(spans)
	return spans, services
}

func grpcReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	r := &receiver{}
	collectorpb.RegisterTraceServiceServer(srv, r)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return r, l.Addr().String()
}

func httpReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	r := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var msg collectorpb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if req.URL.Path != "/v1/traces" || err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.add(&msg, req.Header.Values("Authorization"))
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return r, strings.TrimPrefix(srv.URL, "http://")
}

func runRecords(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestReplayOverBothProtocols(t *testing.T) {
	dir := recordBuild(t)
	for _, protocol := range []string{"grpc", "http"} {
		t.Run(protocol, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer s3cret")
			r, addr := grpcReceiver(t)
			if protocol == "http" {
				r, addr = httpReceiver(t)
			}
			code, out, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--protocol", protocol, "--insecure", "--timeout", "10s")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			// Its 3 records' spans (the session's tally follows them).
			if want := "replayed 1 session, 3 spans, to " + addr + " (OTLP/" + protocol + ")\n"; out != want {
				t.Errorf("stdout %q, want %q", out, want)
			}
			if errOut != "" {
				t.Errorf("stderr %q, want nothing (not a terminal)", errOut)
			}
			spans, services := r.names()
			if !slices.Equal(spans, []string{"compile matmul", "records.tally", "tune", "tune matmul"}) || !slices.Equal(services, []string{"builder"}) {
				t.Errorf("received %q from %q", spans, services)
			}
			// Headers come from the environment, and reach the receiver.
			if !slices.Equal(r.headers, []string{"Bearer s3cret"}) {
				t.Errorf("authorization headers %q", r.headers)
			}
		})
	}
}

func TestReplayOneSessionUnderAnotherService(t *testing.T) {
	dir := recordBuild(t)
	code, out, _ := runRecords(t, "--dir", dir, "sessions", "--json")
	if code != exitOK {
		t.Fatal(code)
	}
	id := strings.TrimPrefix(strings.SplitN(out, ",", 2)[0], `{"id":`)
	r, addr := grpcReceiver(t)
	code, _, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--session", id, "--service", "fleet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if spans, services := r.names(); len(spans) != 4 || !slices.Equal(services, []string{"fleet"}) {
		t.Errorf("received %q from %q", spans, services)
	}

	code, _, errOut = runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--session", "42")
	if code != exitError || !strings.Contains(errOut, "session 42: no such session") {
		t.Errorf("unknown session: exit %d, %s", code, errOut)
	}
}

func TestReplayWhenNothingListens(t *testing.T) {
	dir := recordBuild(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a port that refuses connections
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer s3cret")
	for _, protocol := range []string{"grpc", "http"} {
		begin := time.Now()
		code, out, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--protocol", protocol, "--insecure", "--timeout", "1s")
		if code != exitError || out != "" || !strings.Contains(errOut, "nothing accepted the spans at "+addr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %s", protocol, code, out, errOut)
		}
		if took := time.Since(begin); took > 10*time.Second {
			t.Errorf("%s: gave up after %v; --timeout 1s", protocol, took)
		}
		if strings.Contains(errOut, "s3cret") {
			t.Errorf("%s: the error shows a header: %s", protocol, errOut)
		}
	}
}

func TestReplayUsesTLSUnlessInsecure(t *testing.T) {
	dir := recordBuild(t)
	r, addr := grpcReceiver(t) // plaintext only
	code, _, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--timeout", "1s")
	if code != exitError || !strings.Contains(errOut, "--insecure") {
		t.Errorf("TLS to a plaintext receiver: exit %d, %s", code, errOut)
	}
	if spans, _ := r.names(); len(spans) != 0 {
		t.Errorf("a plaintext receiver got %d spans without --insecure", len(spans))
	}
}

func TestReplayUsage(t *testing.T) {
	dir := recordBuild(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "--endpoint"},
		{[]string{"replay", "--endpoint", "h:1", "--protocol", "thrift"}, `--protocol "thrift"`},
		{[]string{"replay", "--endpoint", "h:1", "--session", "yesterday"}, `--session "yesterday"`},
		{[]string{"replay", "--endpoint", "h:1", "--timeout", "0s"}, "--timeout"},
		{[]string{"replay", "--endpoint", "http://h:1"}, "--insecure"},
		{[]string{"replay", "--endpoint", "https://user:pw@h:1"}, "credentials"},
		{[]string{"replay", "--endpoint", "ftp://h:1"}, "scheme"},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
		code, _, errOut := runRecords(t, append([]string{"--dir", dir}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "pw@") {
			t.Errorf("%q: exit %d, %s", tc.args, code, errOut)
		}
	}
}

func TestReplayMissingStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	code, _, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", "127.0.0.1:1", "--insecure")
	if code != exitError || !strings.Contains(errOut, "no store at") {
		t.Errorf("exit %d, %s", code, errOut)
	}
}
