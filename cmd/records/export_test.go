package main

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// chromeEvent is a Trace Event as the format defines it, decoded loosely
// enough to check every rule.
type chromeEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   json.Number     `json:"ts"`
	Dur  *json.Number    `json:"dur"`
	Pid  json.Number     `json:"pid"`
	Tid  json.Number     `json:"tid"`
	S    string          `json:"s"`
	Args json.RawMessage `json:"args"`
}

// checkChromeTrace checks a Chrome trace file against the rules of the
// Trace Event Format (JSON Object Format) that Perfetto UI and
// chrome://tracing rely on, and returns its complete events:
//   - the file is one JSON object whose traceEvents is an array of events;
//     displayTimeUnit, when present, is "ms" or "ns";
//   - every event has a name, a phase, and integer pid and tid;
//   - complete events ("X") have ts and dur, in microseconds, not negative;
//     instant events ("i") a scope of "g", "p" or "t";
//   - metadata events ("M") name a process or a thread (args.name) or sort
//     one (args.sort_index);
//   - the complete events of one thread nest: sorted by start, each one
//     lies wholly inside the one open before it, or starts after it ended;
//   - every process and every thread with events is named.
func checkChromeTrace(t *testing.T, data []byte) []chromeEvent {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var file struct {
		TraceEvents     []chromeEvent `json:"traceEvents"`
		DisplayTimeUnit *string       `json:"displayTimeUnit"`
	}
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("not a JSON object of trace events: %v", err)
	}
	if file.TraceEvents == nil {
		t.Fatal("no traceEvents array")
	}
	if u := file.DisplayTimeUnit; u != nil && *u != "ms" && *u != "ns" {
		t.Errorf("displayTimeUnit %q", *u)
	}
	integer := func(n json.Number, what string, e chromeEvent) int64 {
		v, err := n.Int64()
		if err != nil {
			t.Fatalf("%s %q of %+v is not an integer", what, n, e)
		}
		return v
	}
	type thread struct{ pid, tid int64 }
	type interval struct{ ts, end int64 }
	slices := map[thread][]interval{}
	processNamed, threadNamed := map[int64]bool{}, map[thread]bool{}
	var complete []chromeEvent
	for _, e := range file.TraceEvents {
		th := thread{integer(e.Pid, "pid", e), integer(e.Tid, "tid", e)}
		ts := integer(e.Ts, "ts", e)
		if e.Ph == "" {
			t.Errorf("event without a phase: %+v", e)
		}
		switch e.Ph {
		case "X":
			if e.Dur == nil {
				t.Fatalf("complete event without dur: %+v", e)
			}
			dur := integer(*e.Dur, "dur", e)
			if ts < 0 || dur < 0 {
				t.Errorf("negative ts or dur: %+v", e)
			}
			slices[th] = append(slices[th], interval{ts, ts + dur})
			complete = append(complete, e)
		case "i":
			if e.S != "g" && e.S != "p" && e.S != "t" {
				t.Errorf("instant event scope %q: %+v", e.S, e)
			}
		case "M":
			var args struct {
				Name      *string      `json:"name"`
				SortIndex *json.Number `json:"sort_index"`
			}
			if err := json.Unmarshal(e.Args, &args); err != nil {
				t.Fatalf("metadata args: %v", err)
			}
			switch e.Name {
			case "process_name":
				processNamed[th.pid] = args.Name != nil && *args.Name != ""
			case "thread_name":
				threadNamed[th] = args.Name != nil && *args.Name != ""
			case "process_sort_index", "thread_sort_index":
				if args.SortIndex == nil {
					t.Errorf("%s without sort_index", e.Name)
				}
			default:
				t.Errorf("unknown metadata event %q", e.Name)
			}
		default:
			t.Errorf("unexpected phase %q: %+v", e.Ph, e)
		}
	}
	for th, ivs := range slices {
		if !processNamed[th.pid] || !threadNamed[th] {
			t.Errorf("pid %d tid %d has events but no name", th.pid, th.tid)
		}
		sortIntervals(ivs, func(i interval) (int64, int64) { return i.ts, i.end })
		var open []int64 // ends of the slices open, innermost last
		for _, iv := range ivs {
			for len(open) > 0 && open[len(open)-1] <= iv.ts {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && open[len(open)-1] < iv.end {
				t.Errorf("pid %d tid %d: slice [%d, %d] overlaps the one open around it, which ends at %d",
					th.pid, th.tid, iv.ts, iv.end, open[len(open)-1])
			}
			open = append(open, iv.end)
		}
	}
	return complete
}

// sortIntervals sorts by start, the longer first on a tie.
func sortIntervals[T any](s []T, key func(T) (int64, int64)) {
	slices.SortStableFunc(s, func(a, b T) int {
		as, ae := key(a)
		bs, be := key(b)
		if c := cmp.Compare(as, bs); c != 0 {
			return c
		}
		return cmp.Compare(be, ae)
	})
}

func TestExportChrome(t *testing.T) {
	dir := writeGoldenStore(t)
	out := filepath.Join(t.TempDir(), "trace.json")
	if got := mustRun(t, "export", "--dir", dir, "--format", "chrome", "-o", out); got != "" {
		t.Errorf("export -o printed %q", got)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	events := checkChromeTrace(t, data)
	if len(events) != 13 {
		t.Fatalf("%d complete events, want one per record, 13", len(events))
	}
	byName := map[string]chromeEvent{}
	for _, e := range events {
		if _, ok := byName[e.Name]; !ok { // session 1's, the first
			byName[e.Name] = e
		}
	}
	load, matmul := byName["load weights"], byName["compile matmul"]
	plan, conv := byName["plan turn 7"], byName["compile conv (async)"]
	if load.Tid != matmul.Tid || load.Pid != matmul.Pid {
		t.Errorf("compile matmul (tid %s) is not on the thread of the mark holding it (tid %s)", matmul.Tid, load.Tid)
	}
	if plan.Tid == conv.Tid {
		t.Errorf("compile conv outlives plan turn 7 but shares its thread %s", plan.Tid)
	}
	if ts := time.UnixMicro(mustInt(t, matmul.Ts)).UTC(); !ts.Equal(goldenStart1.Add(2 * time.Millisecond)) {
		t.Errorf("compile matmul starts at %v, want the session's start + 2ms", ts)
	}
	if byName["load weights"].Pid == byName["compile \x1b[31mred"].Pid {
		t.Error("two sessions share a pid")
	}
	var args struct {
		Kind       string         `json:"kind"`
		Seq        uint64         `json:"seq"`
		WallNs     int64          `json:"wall_ns"`
		Attributes map[string]any `json:"attributes"`
	}
	if err := json.Unmarshal(byName["tune matmul"].Args, &args); err != nil || args.Kind != "autotune" || args.Seq != 4 ||
		args.WallNs != 20e6 || args.Attributes["winner"] != "tiled" {
		t.Errorf("tune matmul args %+v (%v)", args, err)
	}
}

func mustInt(t *testing.T, n json.Number) int64 {
	t.Helper()
	v, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestExportChromeOverlapping exports a session whose records overlap at
// random, as records of many goroutines do, and checks the file.
func TestExportChromeOverlapping(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	rng := rand.New(rand.NewPCG(3, 4))
	var steps []step
	at := time.Duration(0)
	for i := range 300 {
		at += time.Duration(rng.Int64N(int64(200 * time.Microsecond)))
		steps = append(steps, step{at, "work", sessions.Changed, sessions.Record{
			Name: fmt.Sprintf("work %d", i),
			Wall: time.Duration(rng.Int64N(int64(5*time.Millisecond))) + time.Duration(rng.IntN(1000)),
		}})
	}
	recordSteps(t, dir, goldenStart1, "overlap", nil, steps)
	if events := checkChromeTrace(t, []byte(mustRun(t, "export", "--dir", dir, "--format", "chrome"))); len(events) != 300 {
		t.Errorf("%d complete events, want 300", len(events))
	}
}

// decodeOTLP decodes an OTLP JSON file into the OTLP types
// (parseOTLPJSON), or fails the test.
func decodeOTLP(t *testing.T, data []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	req, err := parseOTLPJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func attrOf(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			v := kv.GetValue()
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue()
			default:
				return fmt.Sprint(v.GetIntValue())
			}
		}
	}
	return ""
}

// countOTLPSpans counts the records' spans of req (not the sessions'
// tallies', which follow their records).
func countOTLPSpans(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				if sp.Name != spanbridge.TallyName {
					n++
				}
			}
		}
	}
	return n
}

func TestExportOTLP(t *testing.T) {
	dir := writeGoldenStore(t)
	raw := mustRun(t, "export", "--dir", dir, "--format", "otlp-json")
	if strings.Contains(raw, `"SPAN_KIND_`) || strings.Contains(raw, `"STATUS_CODE_`) {
		t.Error("enums are written as names; OTLP/JSON wants numbers")
	}
	req := decodeOTLP(t, []byte(raw))
	if n := len(req.ResourceSpans); n != 2 {
		t.Fatalf("%d ResourceSpans, want one per session, 2", n)
	}
	spans := map[string]*tracepb.Span{}
	for i, rs := range req.ResourceSpans {
		id := []sessions.SessionID{goldenID1, goldenID2}[i]
		if got := attrOf(rs.GetResource().GetAttributes(), "records.session.id"); got != id.String() {
			t.Errorf("ResourceSpans %d is session %q, want %s", i, got, id)
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				if _, ok := spans[sp.Name]; !ok { // session 1's, the first
					spans[sp.Name] = sp
				}
			}
		}
	}
	if got := attrOf(req.ResourceSpans[0].GetResource().GetAttributes(), "service.name"); got != "builder" {
		t.Errorf("service.name %q, want the session's Resource's, builder", got)
	}
	if n := countOTLPSpans(req); n != 13 {
		t.Errorf("%d spans, want one per record, 13", n)
	}
	tune := spans["tune matmul"]
	bench := spans["bench tiled"]
	if tune == nil || bench == nil || spans["load weights"] == nil {
		t.Fatal("a record, or a mark, is missing")
	}
	if hex.EncodeToString(tune.TraceId) != hex.EncodeToString(goldenTrace[:]) || hex.EncodeToString(tune.SpanId) != hex.EncodeToString(spanTune[:]) {
		t.Errorf("tune matmul ids %x %x, want the original %x %x", tune.TraceId, tune.SpanId, goldenTrace[:], spanTune[:])
	}
	if hex.EncodeToString(bench.ParentSpanId) != hex.EncodeToString(spanTune[:]) {
		t.Errorf("bench tiled parent %x, want tune matmul's span %x", bench.ParentSpanId, spanTune[:])
	}
	start := uint64(goldenStart1.Add(46 * time.Millisecond).UnixNano())
	if tune.StartTimeUnixNano != start || tune.EndTimeUnixNano != start+20e6 {
		t.Errorf("tune matmul %d..%d, want %d..%d", tune.StartTimeUnixNano, tune.EndTimeUnixNano, start, start+20e6)
	}
	if tune.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || tune.Status.GetMessage() != "simd failed" {
		t.Errorf("tune matmul status %v", tune.Status)
	}
	if len(tune.Events) != 1 || tune.Events[0].TimeUnixNano != start+9e6 {
		t.Errorf("tune matmul events %v", tune.Events)
	}
	if got := attrOf(tune.Attributes, "records.kind"); got != "autotune" {
		t.Errorf("records.kind %q", got)
	}
	if got := attrOf(tune.Attributes, "winner"); got != "tiled" {
		t.Errorf("winner %q", got)
	}
}

// TestExportOTLPSpanFidelity checks that an exported span keeps its
// record's span kind, links, trace state and dropped counts, and that a
// record that does not know its kind is exported internal.
func TestExportOTLPSpanFidelity(t *testing.T) {
	req := decodeOTLP(t, []byte(mustRun(t, "export", "--dir", writeStore(t), "--format", "otlp-json")))
	spans := map[string]*tracepb.Span{}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				spans[sp.Name] = sp
			}
		}
	}
	tune, load := spans["tune matmul"], spans["load weights"]
	if tune == nil || load == nil {
		t.Fatalf("spans %v", spans)
	}
	if tune.Kind != tracepb.Span_SPAN_KIND_SERVER || load.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("kinds %v, %v; want server, and internal for a record without one", tune.Kind, load.Kind)
	}
	if tune.TraceState != "vendor=x" {
		t.Errorf("trace state %q", tune.TraceState)
	}
	if tune.DroppedAttributesCount != 2 || tune.DroppedEventsCount != 3 || tune.DroppedLinksCount != 4 {
		t.Errorf("dropped %d %d %d, want 2 3 4", tune.DroppedAttributesCount, tune.DroppedEventsCount, tune.DroppedLinksCount)
	}
	if len(tune.Links) != 1 {
		t.Fatalf("links %v", tune.Links)
	}
	l := tune.Links[0]
	if hex.EncodeToString(l.TraceId) != "ab0000000000000000000000000000cd" || hex.EncodeToString(l.SpanId) != "ef00000000000001" ||
		attrOf(l.Attributes, "why") != "batched request" {
		t.Errorf("link %v", l)
	}
}

// TestExportOTLPLargeSession splits a session of more records than one
// ResourceSpans holds, under the same Resource.
func TestExportOTLPLargeSession(t *testing.T) {
	dir := writeManyRecords(t, otlpSpansPerResource+1500)
	req := decodeOTLP(t, []byte(mustRun(t, "export", "--dir", dir, "--format", "otlp-json")))
	if n := len(req.ResourceSpans); n != 2 {
		t.Fatalf("%d ResourceSpans, want 2", n)
	}
	for _, rs := range req.ResourceSpans {
		if got := attrOf(rs.GetResource().GetAttributes(), "records.session.id"); got != goldenID1.String() {
			t.Errorf("resource of session %q", got)
		}
	}
	if total := countOTLPSpans(req); total != otlpSpansPerResource+1500 {
		t.Errorf("%d spans, want %d", total, otlpSpansPerResource+1500)
	}
}

// TestExportAnyBytes exports records holding bytes that are not UTF-8 and
// control characters: both formats stay valid.
func TestExportAnyBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	recordSteps(t, dir, goldenStart1, "bad \xff label", sessions.Attrs{str("service.name", "x\xfe")}, []step{
		{0, "k\xffind", sessions.Changed, sessions.Record{
			Name:       "name \xff\x00\x1b[2J",
			Wall:       time.Millisecond,
			Attributes: sessions.Attrs{str("key \xfe", "value \xff\u2028"), {Key: "nan", Value: sessions.Float64Value(math.NaN())}},
			Status:     sessions.Status{Code: "error", Description: "\xff"},
			Events:     []sessions.Event{{Name: "\xc3", Attributes: sessions.Attrs{str("\xff", "\xff")}}},
			Scope:      sessions.Scope{Name: "\xff"},
		}},
	})
	for _, format := range []string{"chrome", "otlp-json"} {
		out := mustRun(t, "export", "--dir", dir, "--format", format)
		if !json.Valid([]byte(out)) {
			t.Errorf("%s export is not valid JSON:\n%s", format, out)
		}
	}
	decodeOTLP(t, []byte(mustRun(t, "export", "--dir", dir, "--format", "otlp-json")))
	checkChromeTrace(t, []byte(mustRun(t, "export", "--dir", dir, "--format", "chrome")))
}

func TestExportErrors(t *testing.T) {
	dir := writeGoldenStore(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--dir", dir}, 2, "--format chrome or --format otlp-json"},
		{[]string{"export", "--dir", dir, "--format", "svg"}, 2, `--format "svg"`},
		{[]string{"export", "--dir", dir, "--format", "chrome", "--session", "7"}, 1, "no session 7"},
		{[]string{"export", "--dir", dir, "--format", "otlp-json", "--session", "7"}, 1, "no session 7"},
		{[]string{"export", "--dir", dir, "--format", "chrome", "-o", filepath.Join(t.TempDir(), "no", "such", "dir", "x.json")}, 1, "no such file"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	// A failed export leaves no file behind.
	out := filepath.Join(t.TempDir(), "x.json")
	if code, _, _ := runCLI(t, "export", "--dir", dir, "--format", "chrome", "--session", "7", "-o", out); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("a failed export left %v", entries)
	}
}
