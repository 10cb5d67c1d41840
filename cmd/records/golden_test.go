package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the output")

// The golden stores are made by fixed programs on a fake clock, so every
// command's output is the same from run to run and machine to machine.
var (
	goldenStart1 = time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	goldenStart2 = goldenStart1.Add(time.Hour)
	goldenStartB = goldenStart1.Add(24 * time.Hour)
	goldenID1    = sessions.SessionID(goldenStart1.UnixNano())
	goldenID2    = sessions.SessionID(goldenStart2.UnixNano())
)

// xss is an attribute value that must show as text wherever it is shown.
const xss = `<img src=x onerror=alert(1)>`

var (
	goldenTrace = sessions.TraceID{0: 0x4b, 1: 0xf9, 15: 0x01}
	spanLoad    = sessions.SpanID{0: 0x10, 7: 0x01}
	spanTune    = sessions.SpanID{0: 0x10, 7: 0x02}
	spanBench1  = sessions.SpanID{0: 0x10, 7: 0x03}
	spanBench2  = sessions.SpanID{0: 0x10, 7: 0x04}
)

func str(k, v string) sessions.Attr { return sessions.Attr{Key: k, Value: sessions.StringValue(v)} }
func integer(k string, v int) sessions.Attr {
	return sessions.Attr{Key: k, Value: sessions.Int64Value(int64(v))}
}

// step is one record of a golden session: stamped at `at` after the
// session's start, in the order of the steps, and recorded with its
// effect.
type step struct {
	at     time.Duration
	kind   string
	effect sessions.Effect
	rec    sessions.Record
}

// writeGoldenStore writes store A, which has two sessions:
//
//	session 1, "models build qwen3-8b": a mark "load weights" holding two
//	compiles; a mark "plan turn 7" holding a tune (with two benchmarks
//	inside it), a compile that outlives the mark, and a cache hit; then a
//	compile whose name is markup. Its first records are held until the
//	first change, as the retention rules do.
//	session 2, unlabelled: a compile named with a terminal escape, a mark,
//	and a tune of the same key to another winner.
func writeGoldenStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "a")
	recordSteps(t, dir, goldenStart1, "models build qwen3-8b",
		sessions.Attrs{str("service.name", "builder"), str("service.version", "1.2.0")}, []step{
			{0, sessions.MarksKind, sessions.Observed, sessions.Record{Name: "load weights", Wall: 40 * time.Millisecond,
				TraceID: goldenTrace, SpanID: spanLoad}},
			{2 * time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile matmul", Wall: 12 * time.Millisecond,
				Attributes: sessions.Attrs{integer("bytes", 4096), str("kernel", "matmul_f16")},
				TraceID:    goldenTrace, SpanID: sessions.SpanID{0: 0x20, 7: 1}, ParentSpanID: spanLoad}},
			{15 * time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile softmax", Wall: 8 * time.Millisecond,
				Attributes: sessions.Attrs{integer("bytes", 1024), str("kernel", "softmax_f16")}}},
			{45 * time.Millisecond, sessions.MarksKind, sessions.Observed, sessions.Record{Name: "plan turn 7", Wall: 30 * time.Millisecond}},
			{46 * time.Millisecond, "autotune", sessions.Changed, sessions.Record{
				Name: "tune matmul",
				Wall: 20 * time.Millisecond,
				Attributes: sessions.Attrs{
					str("autotune.key", "matmul 1024x1024"),
					{Key: "candidates", Value: sessions.SliceValue([]string{"tiled", "simd"})},
					{Key: "speedup", Value: sessions.Float64Value(1.5)},
					integer("tried", 2),
					str("winner", "tiled"),
				},
				Status: sessions.Status{Code: "error", Description: "simd failed"},
				Events: []sessions.Event{{Name: "candidate done", Offset: 9 * time.Millisecond,
					Attributes: sessions.Attrs{str("candidate", "tiled")}}},
				TraceID: goldenTrace,
				SpanID:  spanTune,
				Scope:   sessions.Scope{Name: "example.com/tuner", Version: "v0.1.0"},
			}},
			{47 * time.Millisecond, "bench", sessions.Observed, sessions.Record{Name: "bench tiled", Wall: 8 * time.Millisecond,
				Attributes: sessions.Attrs{str("candidate", "tiled")}, TraceID: goldenTrace, SpanID: spanBench1, ParentSpanID: spanTune,
				Scope: sessions.Scope{Name: "example.com/tuner", Version: "v0.1.0"}}},
			{56 * time.Millisecond, "bench", sessions.Observed, sessions.Record{Name: "bench simd", Wall: 9 * time.Millisecond,
				Attributes: sessions.Attrs{str("candidate", "simd")}, TraceID: goldenTrace, SpanID: spanBench2, ParentSpanID: spanTune,
				Scope: sessions.Scope{Name: "example.com/tuner", Version: "v0.1.0"}, Status: sessions.Status{Code: "error", Description: "illegal instruction"}}},
			{60 * time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile conv (async)", Wall: 30 * time.Millisecond,
				Attributes: sessions.Attrs{integer("bytes", 2048), str("kernel", "conv_f16")}}},
			{70 * time.Millisecond, "cache", sessions.Observed, sessions.Record{Name: "cache hit", Wall: time.Millisecond,
				Attributes: sessions.Attrs{str("cache.key", "layernorm")}}},
			{80 * time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile " + xss, Wall: 5 * time.Millisecond,
				Attributes: sessions.Attrs{integer("bytes", 512), str("kernel", xss), str("note", "bidi \u202eevil\u202c and \xff")}}},
		})
	recordSteps(t, dir, goldenStart2, "", nil, []step{
		{time.Second, "compile", sessions.Changed, sessions.Record{Name: "compile \x1b[31mred", Wall: time.Second,
			Attributes: sessions.Attrs{str("kernel", "red"), str("note", "bell\a here")}}},
		{2 * time.Second, sessions.MarksKind, sessions.Observed, sessions.Record{Name: "plan turn 8", Wall: 500 * time.Millisecond}},
		{2100 * time.Millisecond, "autotune", sessions.Changed, sessions.Record{Name: "tune matmul", Wall: 100 * time.Millisecond,
			Attributes: sessions.Attrs{
				str("autotune.key", "matmul 1024x1024"),
				{Key: "candidates", Value: sessions.SliceValue([]string{"tiled", "simd"})},
				integer("tried", 3),
				str("winner", "simd"),
			}}},
	})
	pinHosts(t, dir)
	return dir
}

// writeGoldenStoreB writes store B, for diff: one session that compiled
// matmul as A did, compiled conv and tuned softmax where A did not, and
// tuned matmul to another winner than A's newest tune.
func writeGoldenStoreB(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "b")
	recordSteps(t, dir, goldenStartB, "models build qwen3-8b", nil, []step{
		{0, sessions.MarksKind, sessions.Observed, sessions.Record{Name: "load weights", Wall: 30 * time.Millisecond}},
		{time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile matmul", Wall: 11 * time.Millisecond,
			Attributes: sessions.Attrs{integer("bytes", 4096), str("kernel", "matmul_f16")}}},
		{13 * time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile conv", Wall: 9 * time.Millisecond,
			Attributes: sessions.Attrs{integer("bytes", 2048), str("kernel", "conv_f16")}}},
		{40 * time.Millisecond, "autotune", sessions.Changed, sessions.Record{Name: "tune matmul", Wall: 25 * time.Millisecond,
			Attributes: sessions.Attrs{
				str("autotune.key", "matmul 1024x1024"),
				{Key: "candidates", Value: sessions.SliceValue([]string{"tiled", "simd"})},
				integer("tried", 2),
				str("winner", "tiled"),
			}}},
		{70 * time.Millisecond, "autotune", sessions.Changed, sessions.Record{Name: "tune softmax", Wall: 7 * time.Millisecond,
			Attributes: sessions.Attrs{str("autotune.key", "softmax 512"), str("winner", "simd")}}},
	})
	pinHosts(t, dir)
	return dir
}

// recordSteps runs one session through a Recorder, as an exporter would:
// every step is stamped in order, then recorded, marks last (a mark ends
// after what it holds).
func recordSteps(t *testing.T, dir string, start time.Time, label string, resource sessions.Attrs, steps []step) {
	t.Helper()
	record(t, dir, start, label, resource, func(rec *testsupport.Session) {
		stamps := make([]sessions.Stamp, len(steps))
		for i, s := range steps {
			stamps[i] = rec.Stamp(start.Add(s.at))
		}
		for pass := range 2 { // records first, then marks
			for i, s := range steps {
				if (s.kind == sessions.MarksKind) == (pass == 1) {
					rec.Put(s.kind, s.effect, stamps[i], s.rec)
				}
			}
		}
	})
}

// pinHosts rewrites the store's session rows with fixed host fields: the
// Recorder fills them from the process that runs it (its pid, say), which
// differs from run to run.
func pinHosts(t *testing.T, dir string) {
	t.Helper()
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := sessionRows(sessions.NewRecords(st))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rows {
		s.Process, s.OS, s.Arch, s.Version = 4242, "linux", "amd64", "v0.1.0"
		v, err := s.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Write([]sessions.Entry{{Key: testsupport.SessionKey(s.ID), Value: v}}); err != nil {
			t.Fatal(err)
		}
		pinTallyParts(t, st, s.ID)
	}
}

// pinTallyParts numbers the parts of session id's tally 1, 2, ...: the
// Recorder draws a part from the time it runs, which the replayed and
// exported tally shows (records.tally.part).
func pinTallyParts(t *testing.T, st sessions.Store, id sessions.SessionID) {
	t.Helper()
	r := sessions.NewRecords(st)
	var parts []tallies.Tally
	for p, err := range tallies.Parts(r, id) {
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	if _, err := st.DeleteRange(keys.TallyPrefix(uint64(id)), keys.TallyPrefix(uint64(id)+1), keys.IsTally); err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		p.Part = uint64(i + 1)
		if err := tallies.Put(r, p); err != nil {
			t.Fatal(err)
		}
	}
}

// golden compares got with the golden file testdata/golden/name, or
// rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + w + "\n  got: " + g
		}
	}
	return "(the same lines; line endings differ)"
}

// TestGolden runs every command on the golden stores and compares its
// output with its golden file.
func TestGolden(t *testing.T) {
	a := writeGoldenStore(t)
	b := writeGoldenStoreB(t)
	id1 := goldenID1.String()
	// Paths differ from run to run; the goldens name them $A and $B.
	paths := strings.NewReplacer(a, "$A", b, "$B")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"summary.txt", []string{"summary", "--dir", a}},
		{"summary.json", []string{"summary", "--dir", a, "--json", "--top", "2"}},
		{"timeline.txt", []string{"timeline", "--dir", a}},
		{"timeline.json", []string{"timeline", "--dir", a, "--json", "--session", id1}},
		{"show-compile.txt", []string{"show", "compile", "--dir", a}},
		{"show-autotune-where.txt", []string{"show", "autotune", "--dir", a, "--where", "winner=simd"}},
		{"show-bench.json", []string{"show", "bench", "--dir", a, "--json", "--where", "candidate=simd"}},
		{"diff.txt", []string{"diff", "--dir", a, "--against", b}},
		{"diff.json", []string{"diff", "--dir", a, "--against", b, "--json"}},
		{"diff-same.txt", []string{"diff", "--dir", a, "--against", a, "--kind", "compile"}},
		{"prune-dry-run.txt", []string{"prune", "--dir", a, "--keep", "1", "--dry-run"}},
		{"prune-dry-run.json", []string{"prune", "--dir", a, "--all", "--dry-run", "--json"}},
		{"export-chrome.json", []string{"export", "--dir", a, "--format", "chrome"}},
		{"export-otlp.json", []string{"export", "--dir", a, "--format", "otlp-json"}},
		{"report.html", []string{"report", "--dir", a, "--session", id1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.name, paths.Replace(mustRun(t, c.args...)))
		})
	}
}

// sizes masks the byte counts of compact, which depend on Badger's tables.
var sizes = regexp.MustCompile(`\d+(\.\d+)? (B|KiB|MiB|GiB)`)

func TestGoldenPruneAndCompact(t *testing.T) {
	a := writeGoldenStore(t)
	paths := strings.NewReplacer(a, "$A")
	golden(t, "prune.txt", paths.Replace(mustRun(t, "prune", "--dir", a, "--keep", "1")))
	golden(t, "prune-again.txt", paths.Replace(mustRun(t, "prune", "--dir", a, "--keep", "1")))
	golden(t, "compact.txt", sizes.ReplaceAllString(paths.Replace(mustRun(t, "compact", "--dir", a)), "N"))
	golden(t, "summary-after-prune.txt", paths.Replace(mustRun(t, "summary", "--dir", a)))
}
