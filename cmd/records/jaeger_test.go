package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// TestJaeger replays the example's store into a real Jaeger over both OTLP
// transports and checks, through Jaeger's query API, that every record
// arrived as the span it was; then that WithForward sends a cold session
// and nothing of a warm one. Each part gets a fresh Jaeger (its storage is
// in memory), since replays of one store send the same spans.
func TestJaeger(t *testing.T) {
	bin := jaegerBinary(t)
	store := filepath.Join(t.TempDir(), "store")
	runExample(t, store)
	want := storedRecords(t, store)
	if len(want) < 20 {
		t.Fatalf("the example recorded %d records; want a cold run's 20 or more", len(want))
	}

	for _, protocol := range []string{"grpc", "http"} {
		t.Run("replay/"+protocol, func(t *testing.T) {
			j := startJaeger(t, bin)
			endpoint := map[string]string{"grpc": j.otlpGRPC, "http": j.otlpHTTP}[protocol]
			replayTo := func() {
				code, out, errOut := runRecords(t, "--dir", store, "replay", "--endpoint", endpoint, "--protocol", protocol, "--insecure", "--timeout", "20s")
				if code != exitOK {
					t.Fatalf("replay: exit %d: %s", code, errOut)
				}
				if !strings.HasPrefix(out, fmt.Sprintf("replayed 1 session, %d spans", len(want))) {
					t.Fatalf("replay said %q", out)
				}
			}
			replayTo()
			got := j.waitForSpans(t, "example-build", len(want)+1, false)
			checkReplayed(t, want, withoutTallies(got))

			// A second replay sends the same spans again. Jaeger stores
			// both copies (raw=true shows them) and its query service
			// shows each once: it drops spans identical to one it has.
			replayTo()
			if raw := j.waitForSpans(t, "example-build", 2*(len(want)+1), true); len(raw.spans) != 2*(len(want)+1) {
				t.Fatalf("raw query after two replays: %d spans, want %d", len(raw.spans), 2*(len(want)+1))
			}
			if again := withoutTallies(j.traces(t, "example-build", false)); len(again.spans) != len(want) {
				t.Fatalf("query after two replays: %d spans, want each of the %d once", len(again.spans), len(want))
			}
		})
	}

	// A server span comes back a server span: the replayed span has the
	// kind its record kept (the example's spans are all internal).
	t.Run("replay/span kinds", func(t *testing.T) {
		j := startJaeger(t, bin)
		dir := filepath.Join(t.TempDir(), "store")
		kinds := kindsSession(t, dir, "span-kinds")
		code, _, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", j.otlpGRPC, "--protocol", "grpc", "--insecure", "--timeout", "20s")
		if code != exitOK {
			t.Fatalf("replay: exit %d: %s", code, errOut)
		}
		// The records, and the session's tally.
		got := j.waitForSpans(t, "span-kinds", len(kinds)+1, false)
		if len(got.spans) != len(kinds)+1 {
			t.Fatalf("Jaeger has %d spans, want %d and a tally", len(got.spans), len(kinds))
		}
		for _, s := range got.spans {
			if s.OperationName == spanbridge.TallyName {
				continue
			}
			if want := kinds[s.OperationName]; s.tagMap()["span.kind"] != want.String() {
				t.Errorf("span %q: span.kind %q, want %q", s.OperationName, s.tagMap()["span.kind"], want)
			}
		}
	})

	t.Run("forward", func(t *testing.T) {
		j := startJaeger(t, bin)
		dir := filepath.Join(t.TempDir(), "store")
		warm := forwardSession(t, j.otlpGRPC, dir, "forward-warm", false)
		cold := forwardSession(t, j.otlpGRPC, dir, "forward-cold", true)
		if warm.ForwardStats().Sent != 0 || warm.ForwardStats().Evicted != 0 {
			t.Errorf("warm session: ForwardStats %+v; want nothing sent", warm.ForwardStats())
		}
		got := j.waitForSpans(t, "forward-cold", 6, false)
		byName := map[string]jaegerSpan{}
		for _, s := range got.spans {
			byName[s.OperationName] = s
		}
		for _, name := range []string{"build", "cached 0", "cached 1", "tuned", "compile", "compile after"} {
			if _, ok := byName[name]; !ok {
				t.Errorf("forwarded cold session: no span %q in %v", name, got.spans)
			}
		}
		if p := byName["tuned"].parent(); p != byName["build"].SpanID {
			t.Errorf("tuned's parent %q, want build's span %q", p, byName["build"].SpanID)
		}
		if cold.ForwardStats().Sent != 6 {
			t.Errorf("cold session: ForwardStats %+v; want 6 sent", cold.ForwardStats())
		}
		// The warm session ended (and its exporter shut down) before the
		// cold one began: had it sent anything, Jaeger would have it by
		// now.
		if services := j.services(t); slices.Contains(services, "forward-warm") || !slices.Contains(services, "forward-cold") {
			t.Errorf("services %q: want forward-cold and not forward-warm", services)
		}
	})
}

// runExample runs the example program (a cold build, kept) into store.
func runExample(t *testing.T, store string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, "run", "../../examples/otel", "-dir", store).CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/otel: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "cold run") {
		t.Fatalf("the example did not run cold:\n%s", out)
	}
}

// storedRecord is a record as the store holds it, with what a replay adds.
type storedRecord struct {
	kind    string
	session sessions.Session
	sessions.Stamped[sessions.Record]
}

func storedRecords(t *testing.T, dir string) map[string]storedRecord {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := sessions.NewRecords(st)
	rows := map[sessions.SessionID]sessions.Session{}
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		rows[s.ID] = s
	}
	kinds, err := r.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]storedRecord{}
	for _, kind := range kinds {
		for rec, err := range r.All(kind) {
			if err != nil {
				t.Fatal(err)
			}
			out[rec.Record.SpanID.String()] = storedRecord{kind, rows[rec.Stamp.Session], rec}
		}
	}
	return out
}

// checkReplayed checks that Jaeger holds every record as the span it was:
// ids, parent, name, kind, start and duration (Jaeger keeps microseconds),
// attributes, events, and the session's Resource.
// withoutTallies returns r without the spans of sessions' tallies, which
// replay sends after a session's records.
func withoutTallies(r jaegerResult) jaegerResult {
	r.spans = slices.DeleteFunc(slices.Clone(r.spans), func(s jaegerSpan) bool { return s.OperationName == spanbridge.TallyName })
	return r
}

func checkReplayed(t *testing.T, want map[string]storedRecord, got jaegerResult) {
	t.Helper()
	if len(got.spans) != len(want) {
		t.Errorf("Jaeger has %d spans, want one per record, %d", len(got.spans), len(want))
	}
	seen := map[string]bool{}
	for _, s := range got.spans {
		rec, ok := want[s.SpanID]
		if !ok {
			t.Errorf("span %q (%s) is no record's", s.OperationName, s.SpanID)
			continue
		}
		seen[s.SpanID] = true
		b := rec.Record
		if s.TraceID != b.TraceID.String() || s.parent() != b.ParentSpanID.String() || s.OperationName != b.Name {
			t.Errorf("%s: trace %s parent %q name %q; want %s %q %q", s.SpanID, s.TraceID, s.parent(), s.OperationName, b.TraceID, b.ParentSpanID, b.Name)
		}
		start := rec.session.Started().Add(rec.Stamp.Offset)
		if d := s.StartTime - start.UnixMicro(); d < -1 || d > 1 {
			t.Errorf("%s: starts at %dµs, want %dµs", b.Name, s.StartTime, start.UnixMicro())
		}
		if d := s.Duration - b.Wall.Microseconds(); d < -1 || d > 1 {
			t.Errorf("%s: lasts %dµs, want %dµs", b.Name, s.Duration, b.Wall.Microseconds())
		}
		tags := s.tagMap()
		for _, kv := range b.Attributes {
			if got, want := tags[kv.Key], jaegerValue(kv.Value); got != want {
				t.Errorf("%s: tag %s = %q, want %q", b.Name, kv.Key, got, want)
			}
		}
		if want := cmp.Or(b.SpanKind, "internal"); tags["span.kind"] != want {
			t.Errorf("%s: span.kind %q, want %q", b.Name, tags["span.kind"], want)
		}
		if tags["records.kind"] != rec.kind || tags["records.seq"] != fmt.Sprint(rec.Stamp.Seq) {
			t.Errorf("%s: records.kind %q records.seq %q, want %q %d", b.Name, tags["records.kind"], tags["records.seq"], rec.kind, rec.Stamp.Seq)
		}
		if len(s.Logs) != len(b.Events) {
			t.Errorf("%s: %d logs, want one per event, %d", b.Name, len(s.Logs), len(b.Events))
		} else {
			for i, e := range b.Events {
				if ev := fieldMap(s.Logs[i].Fields)["event"]; ev != e.Name {
					t.Errorf("%s: log %d is %q, want %q", b.Name, i, ev, e.Name)
				}
			}
		}
		p := got.processes[s.ProcessID]
		ptags := fieldMap(p.Tags)
		if p.ServiceName != "example-build" || ptags["records.session.id"] != rec.session.ID.String() ||
			ptags["records.session.label"] != rec.session.Label || ptags["process.pid"] != fmt.Sprint(rec.session.Process) {
			t.Errorf("%s: process %+v; want the session's Resource", b.Name, p)
		}
	}
	for id, rec := range want {
		if !seen[id] {
			t.Errorf("record %s %q (%s) is not in Jaeger", rec.kind, rec.Record.Name, id)
		}
	}
}

// jaegerValue is how Jaeger's JSON shows an attribute value, as a string:
// scalars as themselves, arrays as JSON.
func jaegerValue(v sessions.Value) string {
	switch x := v.Any().(type) {
	case nil:
		return ""
	case string:
		return x
	case bool, int64:
		return fmt.Sprint(x)
	case float64:
		return fmt.Sprint(x)
	}
	b, _ := json.Marshal(v.Any())
	return string(b)
}

// forwardSession runs one session of a build whose exporter forwards to
// Jaeger over OTLP/gRPC at endpoint: a mark holding two cache hits, then
// — when cold — a change and two more spans. It returns the exporter,
// shut down.
func forwardSession(t *testing.T, endpoint, dir, service string, cold bool) *exporter.Exporter {
	t.Helper()
	ctx := context.Background()
	otlp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := exporter.New(dir, exporter.WithForward(otlp), exporter.WithLabel(service))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	tr := tp.Tracer("github.com/otelrecords/otelrecords/cmd/records")
	ctx, build := tr.Start(ctx, "build")
	for i := range 2 {
		_, s := tr.Start(ctx, fmt.Sprint("cached ", i), spanbridge.Record("autotune", attribute.Bool("cached", true))...)
		s.End()
	}
	if cold {
		_, s := tr.Start(ctx, "tuned", spanbridge.Record("autotune", attribute.Bool("cached", false), spanbridge.Changed())...)
		s.End()
		cctx, c := tr.Start(ctx, "compile", spanbridge.Record("compile", spanbridge.Changed())...)
		_, after := tr.Start(cctx, "compile after", trace.WithAttributes(attribute.Int("bytes", 42)))
		after.End()
		c.End()
	}
	build.End()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		t.Fatalf("%s: Shutdown: %v", service, err)
	}
	return rec
}

// kindsSession records one kept session with a span of each kind, named
// after its kind, and returns the kinds by span name.
func kindsSession(t *testing.T, dir, service string) map[string]trace.SpanKind {
	t.Helper()
	rec, err := exporter.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	tr := tp.Tracer("github.com/otelrecords/otelrecords/cmd/records")
	kinds := map[string]trace.SpanKind{}
	for _, k := range []trace.SpanKind{trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer} {
		name := "a " + k.String() + " span"
		_, s := tr.Start(context.Background(), name, append(spanbridge.Record("compile", spanbridge.Changed()), trace.WithSpanKind(k))...)
		s.End()
		kinds[name] = k
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("%s: Shutdown: %v", service, err)
	}
	return kinds
}

func (j *jaeger) services(t *testing.T) []string {
	t.Helper()
	var resp struct{ Data []string }
	j.get(t, "/api/services", &resp)
	return resp.Data
}

// jaegerResult is every span of a query's traces, and their processes.
type jaegerResult struct {
	spans     []jaegerSpan
	processes map[string]jaegerProcess // by trace id + process id
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64         `json:"startTime"` // µs
	Duration  int64         `json:"duration"`  // µs
	Tags      []jaegerField `json:"tags"`
	Logs      []struct {
		Fields []jaegerField `json:"fields"`
	} `json:"logs"`
	ProcessID string `json:"processID"`
}

type jaegerProcess struct {
	ServiceName string        `json:"serviceName"`
	Tags        []jaegerField `json:"tags"`
}

type jaegerField struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tagMap() map[string]string { return fieldMap(s.Tags) }

func fieldMap(fs []jaegerField) map[string]string {
	m := make(map[string]string, len(fs))
	for _, f := range fs {
		m[f.Key] = fmt.Sprint(f.Value)
	}
	return m
}

// traces returns the spans of service's traces; raw asks Jaeger to show
// them as stored, without its adjustments (deduplication among them).
func (j *jaeger) traces(t *testing.T, service string, raw bool) jaegerResult {
	t.Helper()
	q := url.Values{"service": {service}, "limit": {"1000"}}
	if raw {
		q.Set("raw", "true")
	}
	var resp struct {
		Data []struct {
			TraceID   string                   `json:"traceID"`
			Spans     []jaegerSpan             `json:"spans"`
			Processes map[string]jaegerProcess `json:"processes"`
		} `json:"data"`
	}
	j.get(t, "/api/traces?"+q.Encode(), &resp)
	res := jaegerResult{processes: map[string]jaegerProcess{}}
	for _, tr := range resp.Data {
		for _, s := range tr.Spans {
			// Process ids are per trace (p1, p2, ...): make them unique.
			s.ProcessID = tr.TraceID + "/" + s.ProcessID
			s.TraceID = padID(s.TraceID, 32)
			s.SpanID = padID(s.SpanID, 16)
			for i := range s.References {
				s.References[i].SpanID = padID(s.References[i].SpanID, 16)
			}
			res.spans = append(res.spans, s)
		}
		for id, p := range tr.Processes {
			res.processes[tr.TraceID+"/"+id] = p
		}
	}
	return res
}

// padID restores the leading zeros some Jaeger versions drop from ids.
func padID(id string, n int) string {
	if _, err := hex.DecodeString(strings.Repeat("0", len(id)%2) + id); err != nil || len(id) >= n {
		return id
	}
	return strings.Repeat("0", n-len(id)) + id
}

// waitForSpans polls until service's traces hold n spans (ingestion is
// asynchronous), for at most 30 seconds, and returns them.
func (j *jaeger) waitForSpans(t *testing.T, service string, n int, raw bool) jaegerResult {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := j.traces(t, service, raw)
		if len(res.spans) >= n || time.Now().After(deadline) {
			return res
		}
		time.Sleep(200 * time.Millisecond)
	}
}
