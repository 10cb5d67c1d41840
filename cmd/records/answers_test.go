package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// The answers store: four sessions of a model build, an hour apart, on a
// fake clock. Each plans (a mark), tunes matmul (two or three candidates
// benchmarked inside the tune, one after the other) and compiles; some
// tune conv too.
//
//	session 1, service.version 1.0: matmul over tiled,simd; conv over tiled
//	session 2, service.version 1.0: matmul over tiled,simd,split-k (new inputs)
//	session 3, service.version 1.1: the same matmul (a new environment), slower
//	session 4, service.version 1.1: the same again (forgotten), and conv
var (
	answersStart = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	answersIDs   [4]sessions.SessionID
)

func init() {
	for i := range answersIDs {
		answersIDs[i] = sessions.SessionID(answersStart.Add(time.Duration(i) * time.Hour).UnixNano())
	}
}

func writeAnswersStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "answers")
	ms := time.Millisecond
	for i := range 4 {
		version := "1.0"
		if i >= 2 {
			version = "1.1"
		}
		candidates := []string{"tiled", "simd"}
		if i >= 1 {
			candidates = append(candidates, "split-k")
		}
		slow := time.Duration(1)
		if i == 2 {
			slow = 2 // session 3 benchmarks twice as slowly
		}
		spans := []tspan{{kind: sessions.MarksKind, name: "build qwen3-8b", at: 0, id: 1, observed: true}}
		at := ms
		tuneAt := at
		spans = append(spans, tspan{kind: "autotune", name: "tune matmul", at: at, id: 2, parent: 1, attrs: sessions.Attrs{
			str("autotune.key", "matmul"), {Key: "candidates", Value: sessions.SliceValue(candidates)},
			str("winner", candidates[len(candidates)-1])}})
		for j, c := range candidates {
			wall := time.Duration(4+j) * ms * slow
			spans = append(spans, tspan{kind: "bench", name: "bench " + c, at: at, wall: wall, id: uint64(10 + j), parent: 2,
				attrs: sessions.Attrs{str("candidate", c)}, observed: true})
			at += wall
		}
		spans[1].wall = at - tuneAt
		if i == 0 || i == 3 {
			spans = append(spans, tspan{kind: "autotune", name: "tune conv", at: at, wall: 3 * ms, id: 3, parent: 1,
				attrs: sessions.Attrs{str("autotune.key", "conv"), {Key: "candidates", Value: sessions.SliceValue([]string{"tiled"})}, str("winner", "tiled")}})
			at += 3 * ms
		}
		spans = append(spans, tspan{kind: "compile", name: "compile matmul", at: at, wall: 10 * ms, id: 4, parent: 1,
			attrs: sessions.Attrs{str("kernel", "matmul")}})
		at += 10 * ms
		spans[0].wall = at
		writeSpans(t, dir, answersStart.Add(time.Duration(i)*time.Hour), "build qwen3-8b",
			sessions.Attrs{str("service.name", "builder"), str("service.version", version)}, spans)
	}
	pinHosts(t, dir)
	return dir
}

// TestGoldenAnswers runs the commands that answer questions on the
// answers store and compares their output with the golden files.
func TestGoldenAnswers(t *testing.T) {
	dir := writeAnswersStore(t)
	paths := strings.NewReplacer(dir, "$S")
	id := func(i int) string { return answersIDs[i].String() }
	for _, c := range []struct {
		name string
		args []string
	}{
		{"answers-timeline.txt", []string{"timeline", "--session", id(0)}},
		{"answers-summary.txt", []string{"summary"}},
		{"why.txt", []string{"why", "autotune", "autotune.key=matmul"}},
		{"why.json", []string{"why", "autotune", "autotune.key=matmul", "--json"}},
		{"cost.txt", []string{"cost"}},
		{"cost.json", []string{"cost", "--json", "--top", "3"}},
		{"diff-sessions.txt", []string{"diff", "--session", id(1), "--against-session", id(2)}},
		{"diff-sessions.json", []string{"diff", "--session", id(1), "--against-session", id(2), "--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.name, paths.Replace(mustRun(t, append(c.args, "--dir", dir)...)))
		})
	}
}

// TestDiffFailSlower fails a diff when B is slower than A by more than the
// given share, naming what was, and passes it otherwise.
func TestDiffFailSlower(t *testing.T) {
	dir := writeAnswersStore(t)
	id := func(i int) string { return answersIDs[i].String() }
	// Session 3 benchmarked twice as slowly as session 2.
	code, out, errOut := runCLI(t, "diff", "--dir", dir, "--session", id(1), "--against-session", id(2), "--fail-slower", "50")
	for _, want := range []string{
		"B took more than 50% (and 1ms) longer than A: ",
		"marks build qwen3-8b median 26ms → 41ms (+58%)",
		"autotune tune matmul autotune.key=matmul (changed) median 15ms → 30ms (+100%)",
		"bench bench split-k median 6ms → 12ms (+100%)",
	} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("diff --fail-slower 50: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
		}
	}
	if strings.Contains(errOut, "compile") || !strings.Contains(out, "TIME") {
		t.Errorf("diff --fail-slower 50: stdout %q, stderr %q; want the diff printed, and compile (as fast) not named", out, errOut)
	}
	// Not slower by more than 100%: the benches took exactly twice as long.
	if code, _, errOut := runCLI(t, "diff", "--dir", dir, "--session", id(1), "--against-session", id(2), "--fail-slower", "100"); code != 0 || errOut != "" {
		t.Errorf("diff --fail-slower 100: exit %d, stderr %q; want 0", code, errOut)
	}
	// Faster is never slower.
	if code, _, errOut := runCLI(t, "diff", "--dir", dir, "--session", id(2), "--against-session", id(3), "--fail-slower", "0"); code != 0 || errOut != "" {
		t.Errorf("diff of a faster session --fail-slower 0: exit %d, stderr %q; want 0", code, errOut)
	}
	// A key whose median grew by no more than --min-delta is not slower:
	// the benches grew by 4ms to 6ms, the tune by 15ms and the build by
	// 15ms.
	code, _, errOut = runCLI(t, "diff", "--dir", dir, "--session", id(1), "--against-session", id(2), "--fail-slower", "50", "--min-delta", "6ms")
	if code != 1 || strings.Contains(errOut, "bench") || !strings.Contains(errOut, "tune matmul") {
		t.Errorf("diff --fail-slower 50 --min-delta 6ms: exit %d, stderr %q; want the tune and the build alone", code, errOut)
	}
	for _, c := range []struct{ flag, value, want string }{
		{"--fail-slower", "-5", "--fail-slower -5: want a percentage"},
		{"--fail-slower", "abc", `--fail-slower "abc": not a number`},
		{"--min-delta", "5", `--min-delta "5": not a duration`},
		{"--min-delta", "-1ms", "--min-delta -1ms: want a duration"},
		{"--ignore", "net.[", `--ignore "net.[": syntax error in pattern`},
	} {
		code, out, errOut := runCLI(t, "diff", "--dir", dir, "--against-session", id(2), "--fail-slower", "10", c.flag, c.value)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "strconv") {
			t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 2 naming %q", c.flag, c.value, code, out, errOut, c.want)
		}
	}
	if code, _, errOut := runCLI(t, "diff", "--dir", dir, "--against-session", "7"); code != 1 || !strings.Contains(errOut, "no session 7") {
		t.Errorf("--against-session 7: exit %d, stderr %q; want 1, no session 7", code, errOut)
	}
}

// TestDiffJSONWalls reads the walls of diff --json as a script would.
func TestDiffJSONWalls(t *testing.T) {
	dir := writeAnswersStore(t)
	lines := decodeLines(t, mustRun(t, "diff", "--dir", dir, "--session", answersIDs[1].String(),
		"--against-session", answersIDs[2].String(), "--json", "--kind", "autotune"))
	var walls []string
	for _, l := range lines {
		if l["tallies"] != nil { // how many sessions keep a tally: no walls
			continue
		}
		a, b := l["a"].(map[string]any), l["b"].(map[string]any)
		what := l["total"]
		if what == nil {
			what = l["name"]
		}
		walls = append(walls, fmt.Sprintf("%v %v %v", what, a["wall_ns"], b["wall_ns"]))
	}
	want := []string{"tune matmul 15000000 30000000", "duration 16000000 31000000", "kind 15000000 30000000"}
	if !slices.Equal(walls, want) {
		t.Errorf("walls %q, want %q", walls, want)
	}
}

// TestDiffIgnoreExamplesWork: each --ignore its help shows leaves out the
// attributes it says, of a server's requests as otelhttp records them
// (issue 33: the help's 'net.*,server.port' matched no attribute there).
func TestDiffIgnoreExamplesWork(t *testing.T) {
	cmd := (&app{}).diffCommand()
	help := cmd.Long + "\n" + cmd.Example
	examples := regexp.MustCompile(`--ignore\s+'([^']+)'`).FindAllStringSubmatch(help, -1)
	if len(examples) == 0 {
		t.Fatal("the help shows no --ignore")
	}
	dir := filepath.Join(t.TempDir(), "server")
	for i, agent := range []string{"curl/8.5.0", "Go-http-client/1.1"} {
		recordSteps(t, dir, goldenStart1.Add(time.Duration(i)*time.Hour), "server", nil, []step{
			{0, sessions.MarksKind, sessions.Observed, sessions.Record{Name: "GET /lookup", Wall: time.Millisecond, SpanKind: "server", Inputs: []string{},
				Attributes: sessions.Attrs{str("user_agent.original", agent), integer("http.response.body.size", 10+i), str("http.route", "/lookup")}}},
			{time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile", Wall: time.Millisecond}},
		})
	}
	ids := serverSessions(t, dir)
	base := []string{"diff", "--dir", dir, "--session", ids[0], "--against-session", ids[1]}
	if out := mustRun(t, base...); !strings.Contains(out, "user_agent.original: ") || !strings.Contains(out, "http.response.body.size: ") {
		t.Fatalf("without --ignore, the agent and the size are differences:\n%s", out)
	}
	for _, ex := range examples {
		out := mustRun(t, append(base, "--ignore", ex[1])...)
		if !strings.Contains(out, "no differences") {
			t.Errorf("--ignore '%s' (its help's example) leaves differences:\n%s", ex[1], out)
		}
	}
}
