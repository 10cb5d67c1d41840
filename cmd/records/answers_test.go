package main

import (
	"path/filepath"
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
			str("autotune.key", "matmul"), {Key: "candidates", Value: sessions.StringSliceValue(candidates)},
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
				attrs: sessions.Attrs{str("autotune.key", "conv"), {Key: "candidates", Value: sessions.StringSliceValue([]string{"tiled"})}, str("winner", "tiled")}})
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
	} {
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.name, paths.Replace(mustRun(t, append(c.args, "--dir", dir)...)))
		})
	}
}
