package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/internal/ground/version"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// The two sessions of the test store, started an hour apart.
var (
	start1 = time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	start2 = start1.Add(time.Hour)
	id1    = sessions.SessionID(start1.UnixNano())
	id2    = sessions.SessionID(start2.UnixNano())
)

var (
	trace1   = sessions.TraceID{0: 0x4b, 15: 0xf9}
	rootSpan = sessions.SpanID{0: 0x01, 7: 0x02}
	kidSpan  = sessions.SpanID{0: 0x03, 7: 0x04}
)

// writeStore records two sessions into a new store in a temporary directory
// and returns the directory. Records are handed over out of stamp order (a
// mark ends after what it contains), as an exporter hands them over.
//
//	session 1: seq 0 marks "load weights", 1 autotune "tune matmul" (changed),
//	           2 compile "compile matmul"
//	session 2: seq 0 compile "compile \x1b[31mred" (changed), 1 marks "plan turn 7"
func writeStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")

	record(t, dir, start1, "models build qwen3-8b", sessions.Attrs{{Key: "service.name", Value: sessions.StringValue("builder")}},
		func(rec *testsupport.Session) {
			mark := rec.Stamp(start1)
			tune := rec.Stamp(start1.Add(time.Millisecond))
			compile := rec.Stamp(start1.Add(3 * time.Millisecond))
			rec.Put("compile", sessions.Observed, compile, sessions.Record{
				Name:         "compile matmul",
				Wall:         2 * time.Millisecond,
				Attributes:   sessions.Attrs{{Key: "kernel", Value: sessions.StringValue("matmul_f16")}},
				TraceID:      trace1,
				SpanID:       kidSpan,
				ParentSpanID: rootSpan,
			})
			rec.Put("autotune", sessions.Changed, tune, sessions.Record{
				Name: "tune matmul",
				Wall: 5 * time.Millisecond,
				Attributes: sessions.Attrs{
					{Key: "autotune.key", Value: sessions.StringValue("matmul 1024x1024")},
					{Key: "candidates", Value: sessions.SliceValue([]string{"tiled", "simd"})},
					{Key: "tried", Value: sessions.Int64Value(int64(2))},
					{Key: "speedup", Value: sessions.Float64Value(1.5)},
					{Key: "cached", Value: sessions.BoolValue(false)},
				},
				Status: sessions.Status{Code: "error", Description: "simd failed"},
				Events: []sessions.Event{{
					Name:       "candidate done",
					Offset:     time.Millisecond,
					Attributes: sessions.Attrs{{Key: "candidate", Value: sessions.StringValue("tiled")}},
				}},
				TraceID:    trace1,
				SpanID:     rootSpan,
				Scope:      sessions.Scope{Name: "example.com/tuner", Version: "v0.1.0"},
				SpanKind:   "server",
				TraceState: "vendor=x",
				Links: []sessions.Link{{
					TraceID:    sessions.TraceID{0: 0xab, 15: 0xcd},
					SpanID:     sessions.SpanID{0: 0xef, 7: 1},
					Attributes: sessions.Attrs{{Key: "why", Value: sessions.StringValue("batched request")}},
				}},
				DroppedAttributes: 2, DroppedEvents: 3, DroppedLinks: 4,
			})
			rec.Put(sessions.MarksKind, sessions.Observed, mark, sessions.Record{
				Name: "load weights",
				Wall: 10 * time.Millisecond,
			})
		})

	record(t, dir, start2, "", nil, func(rec *testsupport.Session) {
		compile := rec.Stamp(start2.Add(time.Second))
		mark := rec.Stamp(start2.Add(2 * time.Second))
		rec.Put("compile", sessions.Changed, compile, sessions.Record{
			Name: "compile \x1b[31mred",
			Wall: time.Second,
			Attributes: sessions.Attrs{
				{Key: "note", Value: sessions.StringValue("bell\a here")},
				{Key: "path\x1b]0;title\a", Value: sessions.StringValue("x")},
			},
		})
		rec.Put(sessions.MarksKind, sessions.Observed, mark, sessions.Record{
			Name: "plan turn 7",
			Wall: 500 * time.Millisecond,
		})
	})
	return dir
}

// record runs one session, started at start, on the store in dir.
func record(t *testing.T, dir string, start time.Time, label string, resource sessions.Attrs, body func(*testsupport.Session)) {
	t.Helper()
	open := func() (sessions.Store, error) { return badgerstore.Open(dir) }
	testsupport.Write(t, open, start, recorder.Config{Label: label, Resource: resource}, body)
}

// runCLI runs the command line and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRun runs the command line and fails the test unless it succeeds
// without a word on stderr.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 0 || errOut != "" {
		t.Fatalf("records %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return out
}

// decodeLines decodes every line of out as a JSON object, keeping numbers as
// json.Number so integers are checked exactly.
func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for line := range strings.Lines(out) {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", line, err)
		}
		objs = append(objs, m)
	}
	return objs
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func num(s string) json.Number { return json.Number(s) }

func TestSessionsJSON(t *testing.T) {
	dir := writeStore(t)
	got := decodeLines(t, mustRun(t, "sessions", "--dir", dir, "--json"))
	if len(got) != 2 {
		t.Fatalf("got %d sessions, want 2", len(got))
	}
	wantKeys := []string{"arch", "id", "label", "os", "otelrecords_version", "process", "records", "resource", "service_version", "started_unix_ms"}
	for _, s := range got {
		if k := keysOf(s); !slices.Equal(k, wantKeys) {
			t.Errorf("session fields %v, want %v", k, wantKeys)
		}
	}
	host := map[string]any{
		"process":             num(strconv.Itoa(os.Getpid())),
		"os":                  runtime.GOOS,
		"arch":                runtime.GOARCH,
		"otelrecords_version": version.Module(),
		"service_version":     "", // the Resource has no service.version
	}
	want := []map[string]any{
		{
			"id":              id1.String(),
			"started_unix_ms": num(strconv.FormatInt(start1.UnixMilli(), 10)),
			"label":           "models build qwen3-8b",
			"resource":        map[string]any{"service.name": "builder"},
			"records":         map[string]any{"autotune": num("1"), "compile": num("1"), "marks": num("1")},
		},
		{
			"id":              id2.String(),
			"started_unix_ms": num(strconv.FormatInt(start2.UnixMilli(), 10)),
			"label":           "",
			"resource":        map[string]any{},
			"records":         map[string]any{"compile": num("1"), "marks": num("1")},
		},
	}
	for i := range want {
		for k, v := range host {
			want[i][k] = v
		}
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("session %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

func TestSessionsText(t *testing.T) {
	dir := writeStore(t)
	out := mustRun(t, "sessions", "--dir", dir)
	lines := slices.Collect(strings.Lines(out))
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want a header and 2 sessions:\n%s", len(lines), out)
	}
	for i, want := range [][]string{
		{"ID", "STARTED", "LABEL", "PID", "OS", "ARCH", "VERSION", "RECORDS"},
		{id1.String(), "2025-01-02T03:04:05.006Z", "models build qwen3-8b", "autotune=1 compile=1 marks=1"},
		{id2.String(), "2025-01-02T04:04:05.006Z", "-", "compile=1 marks=1"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	// tabwriter aligns the columns: every STARTED cell begins where its
	// header does.
	col := strings.Index(lines[0], "STARTED")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l[col:], "2025-") {
			t.Errorf("line %q is not aligned under STARTED", l)
		}
	}
}

func TestDumpJSONOrderAndFields(t *testing.T) {
	dir := writeStore(t)
	got := decodeLines(t, mustRun(t, "dump", "--dir", dir, "--json"))

	type pos struct {
		kind    string
		session sessions.SessionID
		seq     string
	}
	var order []pos
	for _, r := range got {
		order = append(order, pos{r["kind"].(string), sessionOf(t, r), string(r["seq"].(json.Number))})
	}
	wantOrder := []pos{
		{"marks", id1, "0"}, {"autotune", id1, "1"}, {"compile", id1, "2"},
		{"compile", id2, "0"}, {"marks", id2, "1"},
	}
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("order\n got %v\nwant %v", order, wantOrder)
	}

	wantKeys := []string{"attributes", "effect", "events", "kind", "links", "name", "offset_ns", "parent_span_id", "scope",
		"seq", "session", "span_id", "span_kind", "status", "trace_id", "wall_ns"}
	for _, r := range got {
		if k := keysOf(r); !slices.Equal(k, wantKeys) {
			t.Errorf("record fields %v, want %v", k, wantKeys)
		}
	}

	tune := got[1]
	wantTune := map[string]any{
		"kind":      "autotune",
		"session":   id1.String(),
		"seq":       num("1"),
		"offset_ns": num("1000000"),
		"name":      "tune matmul",
		"wall_ns":   num("5000000"),
		"attributes": map[string]any{
			"autotune.key": "matmul 1024x1024",
			"candidates":   []any{"tiled", "simd"},
			"tried":        num("2"),
			"speedup":      num("1.5"),
			"cached":       false,
		},
		"status": map[string]any{"code": "error", "description": "simd failed"},
		"events": []any{map[string]any{
			"name":       "candidate done",
			"offset_ns":  num("1000000"),
			"attributes": map[string]any{"candidate": "tiled"},
		}},
		"trace_id":       "4b0000000000000000000000000000f9",
		"span_id":        "0100000000000002",
		"parent_span_id": "",
		"scope":          map[string]any{"name": "example.com/tuner", "version": "v0.1.0"},
		"span_kind":      "server",
		"effect":         "changed",
		"links": []any{map[string]any{
			"trace_id":   "ab0000000000000000000000000000cd",
			"span_id":    "ef00000000000001",
			"attributes": map[string]any{"why": "batched request"},
		}},
	}
	if !reflect.DeepEqual(tune, wantTune) {
		t.Errorf("autotune record:\n got %v\nwant %v", tune, wantTune)
	}

	compile := got[2]
	if compile["parent_span_id"] != "0100000000000002" || compile["span_id"] != "0300000000000004" {
		t.Errorf("compile ids: span %v parent %v", compile["span_id"], compile["parent_span_id"])
	}

	// A mark: its label is its name; the parts it does not have are empty,
	// never missing or null.
	wantMark := map[string]any{
		"kind":           "marks",
		"session":        id2.String(),
		"seq":            num("1"),
		"offset_ns":      num("2000000000"),
		"name":           "plan turn 7",
		"wall_ns":        num("500000000"),
		"attributes":     map[string]any{},
		"status":         map[string]any{"code": "unset", "description": ""},
		"events":         []any{},
		"trace_id":       "",
		"span_id":        "",
		"parent_span_id": "",
		"scope":          map[string]any{"name": "", "version": ""},
		"span_kind":      "unspecified", // not made from a span
		"links":          []any{},
		"effect":         nil, // observed, written with no inputs: it does not say
	}
	if !reflect.DeepEqual(got[4], wantMark) {
		t.Errorf("mark:\n got %v\nwant %v", got[4], wantMark)
	}

	// JSON keeps the bytes a terminal must not see, escaped.
	if got[3]["name"] != "compile \x1b[31mred" {
		t.Errorf("JSON name %q, want the stored bytes", got[3]["name"])
	}
}

func sessionOf(t *testing.T, r map[string]any) sessions.SessionID {
	t.Helper()
	s, _ := r["session"].(string) // ids are strings (FORMAT.md 8)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("session %v: %v", r["session"], err)
	}
	return sessions.SessionID(n)
}

func TestDumpFilters(t *testing.T) {
	dir := writeStore(t)
	names := func(args ...string) []string {
		t.Helper()
		var out []string
		for _, r := range decodeLines(t, mustRun(t, append([]string{"dump", "--dir", dir, "--json"}, args...)...)) {
			out = append(out, r["name"].(string))
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--kind", "compile"}, []string{"compile matmul", "compile \x1b[31mred"}},
		{[]string{"--kind", "/marks/"}, []string{"load weights", "plan turn 7"}},
		{[]string{"--session", id2.String()}, []string{"compile \x1b[31mred", "plan turn 7"}},
		{[]string{"--session", id1.String(), "--kind", "marks"}, []string{"load weights"}},
		// A session the store does not have is an error: TestNoSuchSession.
	} {
		if got := names(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("dump %v: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestDumpText(t *testing.T) {
	dir := writeStore(t)
	out := mustRun(t, "dump", "--dir", dir)
	if strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && render.Clean(string(r)) != string(r) }) {
		t.Errorf("text output holds control characters:\n%q", out)
	}
	want := strings.Join([]string{
		id1.String() + `  0  0s   marks     load weights     10ms   -`,
		id1.String() + `  1  1ms  autotune  tune matmul      5ms    changed  autotune.key="matmul 1024x1024" cached=false candidates=[tiled simd] speedup=1.5 tried=2`,
		id1.String() + `  2  3ms  compile   compile matmul   2ms    -        kernel=matmul_f16`,
		id2.String() + `  0  1s   compile   compile [31mred  1s     changed  note="bell here" path]0;title=x`,
		id2.String() + `  1  2s   marks     plan turn 7      500ms  -`,
	}, "\n") + "\n"
	if out != want {
		t.Errorf("text dump:\n got:\n%s\nwant:\n%s", out, want)
	}
}

func TestMissingStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never", "recorded")
	for _, args := range [][]string{
		{"sessions", "--dir", dir},
		{"dump", "--dir", dir, "--json"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		if want := "records: no store at " + dir + " (nothing has been recorded there yet)\n"; errOut != want {
			t.Errorf("%v: stderr %q, want %q", args, errOut, want)
		}
		if out != "" {
			t.Errorf("%v: stdout %q, want nothing", args, out)
		}
		if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v: reading a missing store created %s (stat: %v)", args, filepath.Dir(dir), err)
		}
	}
}

func TestDefaultDirFromEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "from-env")
	t.Setenv("OTELRECORDS_DIR", dir)
	code, _, errOut := runCLI(t, "sessions")
	if code != 1 || !strings.Contains(errOut, "no store at "+dir+" ") {
		t.Errorf("exit %d, stderr %q: want the missing store at $OTELRECORDS_DIR", code, errOut)
	}

	t.Setenv("OTELRECORDS_DIR", writeStore(t))
	if got := decodeLines(t, mustRun(t, "sessions", "--json")); len(got) != 2 {
		t.Errorf("read %d sessions from $OTELRECORDS_DIR, want 2", len(got))
	}
}

func TestBusyStore(t *testing.T) {
	dir := writeStore(t)
	writer, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	code, out, errOut := runCLI(t, "dump", "--dir", dir, "--wait", "300ms")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "records: waiting for the store at " + dir + ": another process holds it\n"; !strings.HasPrefix(errOut, want) {
		t.Errorf("stderr %q, want it to say it waits first", errOut)
	}
	errOut = strings.TrimPrefix(errOut, "records: waiting for the store at "+dir+": another process holds it\n")
	if want := "records: the store at " + dir + " is busy: another process holds it open for writing"; !strings.HasPrefix(errOut, want) {
		t.Errorf("stderr %q, want it to start with %q", errOut, want)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
}

func TestSkippedValues(t *testing.T) {
	dir := writeSkippedStore(t)

	code, out, errOut := runCLI(t, "dump", "--dir", dir, "--json")
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	if n := len(decodeLines(t, out)); n != 5 {
		t.Errorf("dumped %d records, want the 5 that decode", n)
	}
	// The count names the next step: the doctor's check of the store's
	// files, a damaged block being one reason a value does not decode.
	want := "records: 2 values did not decode and were skipped; run records doctor --check --dir " + dir + " to check the store's files for damage\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}

	// Read with another store, the values may be in either.
	_, _, errOut = runCLI(t, "dump", "--dir", dir, "--dir", writeStore(t))
	want = "records: 2 values did not decode and were skipped; run records doctor --check --dir on each store to check its files for damage\n"
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr of two stores %q, want it to hold %q", errOut, want)
	}
}

// TestUsageErrors checks that a wrong command line exits 2 with a hint
// naming the help of the command it was wrong for: the subcommand's, or
// the root's for a command that is not there.
func TestUsageErrors(t *testing.T) {
	dir := writeStore(t)
	for _, c := range []struct {
		args []string
		help string
	}{
		{[]string{"frobnicate"}, "records"},
		{[]string{"dump", "--dir", dir, "--no-such-flag"}, "records dump"},
		{[]string{"dump", "--dir", dir, "--session", "yesterday"}, "records dump"},
		{[]string{"dump", "--dir", dir, "--kind", "sessions"}, "records dump"},
		{[]string{"sessions", "--dir", dir, "extra"}, "records sessions"},
		{[]string{"why", "--dir", dir}, "records why"},
		{[]string{"--dir", dir, "why", "--no-such-flag"}, "records why"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		hint := "\nRun '" + c.help + " --help' for usage.\n"
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "records: ") || !strings.HasSuffix(errOut, hint) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and the hint %q", c.args, code, out, errOut, hint)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"},
		{"sessions", "--help"},
		{"dump", "--help"},
		{"help", "dump"},
	} {
		out := mustRun(t, args...)
		for _, want := range []string{"Usage:", "Examples:", "--dir"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, out)
			}
		}
	}
}
