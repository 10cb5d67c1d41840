package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// exampleChecks are the checks of the examples, by the example's line
// (without its comment): what each says it prints, asserted on what it
// printed and on what it left, with the facts of the stores the sandbox
// holds (examples_store_test.go).
func exampleChecks(w *exampleWorld) map[string]exampleCheck {
	s1, s2, s3, s4 := w.ids[0], w.ids[1], w.ids[2], w.ids[3]
	b1 := fmt.Sprint(helpB1.UnixNano())
	all := w.helpSpans()
	return map[string]exampleCheck{
		// The sessions, oldest first: when, label, records per kind.
		"records sessions":                       {check: w.sessionsTable},
		"records sessions --dir ./build/records": {check: w.sessionsTable},
		// The ids of the sessions that tuned, as jq 1.6 reads them, which
		// timeline --session finds.
		"records sessions --json | jq -r 'select(.records.autotune > 0) | .id'": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, x.lines, []string{s1, s2, s3})
			for _, id := range x.lines {
				if out := x.records(t, "timeline", "--dir", x.defaultStore(), "--session", id); !strings.Contains(out, "session "+id) {
					t.Errorf("timeline --session %s does not find it:\n%s", id, out)
				}
			}
		}},

		// Every record, in stamp order; one kind's; one session's.
		"records dump": {check: func(t *testing.T, x *exampleRun) {
			var got, want []string
			for _, f := range fieldsOf(x.lines) {
				got = append(got, f[0]+" "+f[1]+" "+f[4])
			}
			for i, r := range w.runs {
				for seq, name := range r.root.names() {
					want = append(want, fmt.Sprintf("%s %d %s", w.ids[i], seq, strings.Fields(name)[0]))
				}
			}
			wantLines(t, got, want)
		}},
		"records dump --kind autotune": {check: func(t *testing.T, x *exampleRun) {
			var got []string
			for i, f := range fieldsOf(x.lines) {
				got = append(got, f[0]+" "+f[3]+" "+regexp.MustCompile(`winner=\S+`).FindString(x.lines[i]))
			}
			wantLines(t, got, []string{s1 + " autotune winner=tiled", s2 + " autotune winner=simd", s3 + " autotune winner=simd"})
		}},
		"records dump --session 1735787045006000000 --json": {check: func(t *testing.T, x *exampleRun) {
			wantRecords(t, x.lines, s1, w.runs[0].root.names())
		}},
		"records --dir ./build/records dump --session 1735787045006000000 --json": {check: func(t *testing.T, x *exampleRun) {
			wantRecords(t, x.lines, s1, w.runs[0].root.names())
		}},
		// The records that failed: the simd candidate, in both builds.
		`records dump --json | jq -c 'select(.status.code == "error")'`: {check: func(t *testing.T, x *exampleRun) {
			var got []string
			for _, r := range decodeLines(t, x.stdout) {
				got = append(got, fmt.Sprint(r["session"], " ", r["name"], ": ", r["status"].(map[string]any)["description"]))
			}
			wantLines(t, got, []string{s1 + " bench simd: illegal instruction", s2 + " bench simd: illegal instruction"})
		}},

		// One kind's records as a table, attributes as columns.
		"records show autotune": {check: func(t *testing.T, x *exampleRun) {
			showTable(t, x.lines, []string{s1 + " tiled", s2 + " simd", s3 + " simd"})
		}},
		"records show autotune --where autotune.key=matmul_1024 --where winner=tiled": {check: func(t *testing.T, x *exampleRun) {
			showTable(t, x.lines, []string{s1 + " tiled"})
		}},
		"records show compile --session 1735787045006000000 --json": {check: func(t *testing.T, x *exampleRun) {
			var got []string
			for _, r := range decodeLines(t, x.stdout) {
				got = append(got, fmt.Sprint(r["session"], " ", r["kind"], " ", r["name"]))
			}
			wantLines(t, got, []string{s1 + " compile compile matmul", s1 + " compile compile softmax"})
		}},

		// Each session as a tree.
		"records timeline": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, timelineSessions(x.lines), w.ids)
			if rows := treeRows(x.lines); len(rows) != total(all) {
				t.Errorf("%d records in the trees, want %d", len(rows), total(all))
			}
		}},
		"records timeline --session 1735787045006000000": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, timelineSessions(x.lines), []string{s1})
			wantLines(t, treeRows(x.lines), []string{"plan", "├─ GET weights", "├─ tune matmul", "│  ├─ bench tiled", "│  └─ bench simd", "├─ compile matmul", "└─ compile softmax"})
		}},
		// The roots of each session's tree: its plan (the tests' run).
		"records timeline --json | jq -c 'select(.depth == 0)'": {check: func(t *testing.T, x *exampleRun) {
			var got, want []string
			for _, r := range decodeLines(t, x.stdout) {
				got = append(got, fmt.Sprint(r["session"], " ", r["seq"], " ", r["name"], " ", r["parent_seq"]))
			}
			for i, r := range w.runs {
				want = append(want, w.ids[i]+" 0 "+r.root.name+" <nil>")
			}
			wantLines(t, got, want)
		}},

		// A row per session, then each one's critical path.
		"records summary": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, summaryRows(x.lines), w.ids)
			wantLines(t, criticalPaths(x.lines), w.ids)
		}},
		"records summary --top 10 --session 1735787045006000000": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, summaryRows(x.lines), []string{s1})
			wantLines(t, criticalPaths(x.lines), []string{s1})
			// All seven of its records are among its ten slowest.
			for _, name := range w.runs[0].root.names() {
				if !strings.Contains(x.lines[1], name) {
					t.Errorf("the slowest of session %s do not name %q: %s", s1, name, x.lines[1])
				}
			}
		}},
		// Each session's label, and how long it lasted, in seconds.
		`records summary --json | jq -r '"\(.label): \(.duration_ns / 1e9)s"'`: {check: func(t *testing.T, x *exampleRun) {
			var want []string
			for _, r := range w.runs {
				want = append(want, fmt.Sprintf("%s: %ss", r.label, strconv.FormatFloat(r.root.wall.Seconds(), 'f', -1, 64)))
			}
			wantLines(t, x.lines, want)
		}},

		// A CI runner's store against the laptop's default store.
		"records diff --dir ./ci-store --against ~/.cache/otelrecords/default": {check: func(t *testing.T, x *exampleRun) {
			wantPrefix(t, x.lines, "A  ./ci-store  1 session, 4 records", "B  "+x.defaultStore()+"  4 sessions, 19 records")
			wantDiffRow(t, x.stdout, "~  autotune  tune matmul autotune.key=matmul_1024", "tried: 3 → 2, winner: tiled → simd")
		}},
		// Fails when B is more than 10% slower: it names what got slower
		// (the softmax compile, +25%, and the download, 2ms → 4ms), and
		// nothing else (the tune, +5%).
		"records diff --session 1735787045006000000 --against-session 1735790645006000000 --fail-slower 10": {status: 1, check: func(t *testing.T, x *exampleRun) {
			wantSlower(t, x.stderr, []string{"compile compile softmax", "download GET weights"})
		}},
		// Stores compared on one kind, an attribute left out.
		"records diff --dir A --against B --kind autotune --ignore tried": {check: func(t *testing.T, x *exampleRun) {
			wantDiffRow(t, x.stdout, "~  autotune  tune matmul autotune.key=matmul_1024", "winner: simd → tiled")
			if strings.Contains(x.stdout, "tried") {
				t.Errorf("--ignore tried, and it shows tried")
			}
			for _, f := range fieldsOf(diffRows(x.stdout)) {
				if f[1] != "autotune" {
					t.Errorf("--kind autotune, and it shows a %s", f[1])
				}
			}
			// Without --ignore, tried is a difference.
			if out := x.records(t, "diff", "--dir", x.path("A"), "--against", x.path("B"), "--kind", "autotune"); !strings.Contains(out, "tried: 2 → 3") {
				t.Errorf("without --ignore tried, tried is no difference: the example shows nothing\n%s", out)
			}
		}},
		// A gate that leaves out what changes from run to run (the user
		// agent, the size of a response) and what is slower by less than
		// 5ms: the download took twice as long, 2ms more, and passes.
		"records diff --session 1735787045006000000 --against-session 1735790645006000000 --ignore 'user_agent.*,http.response.body.size' --fail-slower 50 --min-delta 5ms": {check: func(t *testing.T, x *exampleRun) {
			for _, attr := range []string{"user_agent.original", "http.response.body.size"} {
				if strings.Contains(x.stdout, attr) {
					t.Errorf("--ignore leaves out %s, and it shows", attr)
				}
			}
			code, out, errOut := runCLI(t, "diff", "--dir", x.defaultStore(), "--session", s1, "--against-session", s2, "--fail-slower", "50")
			if code != 1 || !strings.Contains(out, "user_agent.original: build/1.0 → build/1.1") {
				t.Errorf("without --ignore and --min-delta: exit %d, want 1 (the download), and the user agent a difference:\n%s%s", code, out, errOut)
			}
			wantSlower(t, errOut, []string{"download GET weights"})
		}},
		// Matched by kernel: the softmax compile, under another
		// compile.key on B, is one match that changed.
		"records diff --dir A --against B --key kernel --json": {check: func(t *testing.T, x *exampleRun) {
			var found bool
			for _, r := range decodeLines(t, x.stdout) {
				if r["kind"] != "compile" || r["name"] != "compile softmax" {
					continue
				}
				found = true
				got, _ := json.Marshal(map[string]any{"change": r["change"], "key": r["key"], "differences": r["differences"]})
				if want := `{"change":"changed","differences":[{"a":"softmax_512","b":"softmax_1024","key":"compile.key"}],"key":{"kernel":"softmax_f16"}}`; string(got) != want {
					t.Errorf("compile softmax: %s, want %s", got, want)
				}
			}
			if !found {
				t.Errorf("no match of compile softmax")
			}
		}},

		// Why each record of a key was done: new, then done again.
		"records why autotune autotune.key=matmul_1024": {check: func(t *testing.T, x *exampleRun) {
			wantWhy(t, x.lines, []string{s1 + " new:", s2 + " forgotten:", s3 + " observed:"})
			if !strings.Contains(x.stdout, "came out differently: winner: tiled → simd") {
				t.Errorf("it does not say the tune came out differently")
			}
		}},
		"records why compile kernel=softmax_f16 --json | jq -r .reason": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, x.lines, []string{"new", "forgotten"})
		}},
		// Several stores as one: runner-1's builds and runner-2's, in
		// time order.
		"records --dir 'ci-stores/*' why compile compile.key=matmul_1024": {check: func(t *testing.T, x *exampleRun) {
			wantWhy(t, x.lines, []string{s1 + " new:", b1 + " forgotten:", s3 + " environment"})
		}},

		// Time in children, and the work done more than once.
		"records cost": {check: func(t *testing.T, x *exampleRun) {
			if !slices.ContainsFunc(x.lines, func(l string) bool {
				return slices.Equal(strings.Fields(l), strings.Fields("autotune bench 2 4 38ms 38ms in 4 children"))
			}) {
				t.Errorf("no row of the tunes' benchmarks (2 tunes, 4 benchmarks, 38ms that changed nothing)")
			}
			for _, row := range []string{"compile compile softmax compile.key=softmax_512 2 2 4.5s 1", "compile compile matmul compile.key=matmul_1024 2 2 120ms 1",
				"autotune tune matmul autotune.key=matmul_1024 3 3 83ms 1", "download GET weights 2 2 6ms 1"} {
				if !slices.ContainsFunc(x.lines, func(l string) bool { return strings.HasPrefix(strings.Join(strings.Fields(l), " "), row) }) {
					t.Errorf("no row %q (TIMES, SESSIONS, TIME, REDONE) of the work done again", row)
				}
			}
		}},
		// Every piece of work recorded more than once: the four done
		// again (redone), the two benchmarks found done (hits).
		`records cost --top 0 --json | jq -c 'select(.table == "redone")'`: {check: func(t *testing.T, x *exampleRun) {
			var got []string
			for _, r := range decodeLines(t, x.stdout) {
				got = append(got, fmt.Sprint(r["table"], " ", r["kind"], " ", r["name"], ": ", r["records"], " records, ", r["redone"], " redone, ", r["hits"], " hits"))
			}
			wantLines(t, got, []string{
				"redone compile compile softmax: 2 records, 1 redone, 0 hits",
				"redone compile compile matmul: 2 records, 1 redone, 0 hits",
				"redone autotune tune matmul: 3 records, 1 redone, 1 hits",
				"redone download GET weights: 2 records, 1 redone, 0 hits",
				"redone bench bench tiled: 2 records, 0 redone, 2 hits",
				"redone bench bench simd: 2 records, 0 redone, 2 hits",
			})
		}},

		// Records as a program writes them: every one, as dump prints
		// them; the tunes; those of more than a second.
		"records watch": {store: "none", follow: &following{lines: total(all), store: true}, check: func(t *testing.T, x *exampleRun) {
			wantWatched(t, x.lines, x.records(t, "dump", "--dir", x.defaultStore()))
		}},
		"records watch --kind autotune": {store: "none", follow: &following{lines: 3, store: true}, check: func(t *testing.T, x *exampleRun) {
			wantWatched(t, x.lines, x.records(t, "dump", "--dir", x.defaultStore(), "--kind", "autotune"))
		}},
		"records watch --json | jq -c 'select(.wall_ns > 1e9)'": {store: "none", follow: &following{lines: 4, store: true}, check: func(t *testing.T, x *exampleRun) {
			var got []string
			for _, r := range decodeLines(t, x.stdout) {
				got = append(got, fmt.Sprint(r["session"], " ", r["name"]))
			}
			slices.Sort(got)
			wantLines(t, got, []string{s1 + " compile softmax", s1 + " plan", s2 + " compile softmax", s2 + " plan"})
		}},

		// prune, on 23 builds: the newest N kept, the others printed as
		// they go; --dry-run deletes nothing.
		"records prune --keep 20": {store: "many", check: func(t *testing.T, x *exampleRun) {
			wantPruned(t, x, "pruned 3 sessions", w.many[:3], w.many[3:])
		}},
		"records prune --keep 1 --dry-run": {store: "many", check: func(t *testing.T, x *exampleRun) {
			wantPruned(t, x, "would prune 22 sessions", w.many[:22], w.many)
		}},
		"records prune --all --dry-run": {store: "many", check: func(t *testing.T, x *exampleRun) {
			wantPruned(t, x, "would prune 23 sessions", w.many, w.many)
		}},
		// Then the disk space given back.
		"records prune --keep 5 && records compact": {store: "many", check: func(t *testing.T, x *exampleRun) {
			last := x.lines[len(x.lines)-1]
			x.lines = x.lines[:len(x.lines)-1]
			wantPruned(t, x, "pruned 18 sessions", w.many[:18], w.many[18:])
			if m := regexp.MustCompile(`^compacted (\S+): .+ → .+, .+ given back$`).FindStringSubmatch(last); m == nil || m[1] != x.defaultStore() {
				t.Errorf("it ends %q, want compacted %s: before → after, what was given back", last, x.defaultStore())
			}
		}},
		"records compact --dir ./build/records --json": {check: func(t *testing.T, x *exampleRun) {
			rs := decodeLines(t, x.stdout)
			if len(rs) != 1 {
				t.Fatalf("%d JSON lines, want 1", len(rs))
			}
			before, after, freed := mustNumber(t, rs[0]["before_bytes"]), mustNumber(t, rs[0]["after_bytes"]), mustNumber(t, rs[0]["freed_bytes"])
			if before <= 0 || after > before || freed != before-after {
				t.Errorf("before %d, after %d, freed %d", before, after, freed)
			}
			wantLines(t, serverSessions(t, x.path("build/records")), w.ids)
		}},

		// A healthy store is left alone.
		"records doctor": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, x.lines, []string{"The store at " + x.defaultStore() + " is healthy: nothing to do."})
			wantLines(t, serverSessions(t, x.defaultStore()), w.ids)
		}},
		"records doctor --dir ./build/records --check": {check: func(t *testing.T, x *exampleRun) {
			wantLines(t, x.lines, []string{"The store at ./build/records is healthy."})
		}},

		// A Chrome trace of every session: a process each, a slice per
		// record.
		"records export --format chrome -o build.trace.json": {check: func(t *testing.T, x *exampleRun) {
			events := checkChromeTrace(t, mustRead(t, x.path("build.trace.json")))
			pids := map[string]bool{}
			for _, e := range events {
				pids[e.Pid.String()] = true
			}
			if len(events) != total(all) || len(pids) != len(w.ids) {
				t.Errorf("%d slices in %d processes, want %d in %d", len(events), len(pids), total(all), len(w.ids))
			}
		}},
		// One session as OTLP JSON, which an OTLP/HTTP receiver takes as
		// it is.
		"records export --format otlp-json --session 1735787045006000000 -o session.otlp.json": {check: func(t *testing.T, x *exampleRun) {
			req := decodeOTLP(t, mustRead(t, x.path("session.otlp.json")))
			got := map[string]int{}
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, sp := range ss.Spans {
						if sp.Name != spanbridge.TallyName { // the session's tally follows its records
							got[attrOf(rs.GetResource().GetAttributes(), "records.session.id")]++
						}
					}
				}
			}
			wantSpans(t, got, w.helpSpans(s1))
		}},
		"curl -H 'Content-Type: application/json' --data-binary @session.otlp.json http://localhost:4318/v1/traces": {
			after: "records export --format otlp-json --session 1735787045006000000 -o session.otlp.json",
			check: func(t *testing.T, x *exampleRun) { wantSpans(t, w.standIns.httpPlain.sessionSpans(), w.helpSpans(s1)) },
		},

		// replay: every session, as spans, to the collector (TLS), or
		// plaintext to a local one; one session; only what was not sent.
		"records replay --endpoint collector.example.com:4317": {check: func(t *testing.T, x *exampleRun) {
			wantSpans(t, w.standIns.grpcTLS.sessionSpans(), all)
		}},
		"records replay --endpoint collector.example.com:4318 --protocol http": {check: func(t *testing.T, x *exampleRun) {
			wantSpans(t, w.standIns.httpTLS.sessionSpans(), all)
		}},
		"records replay --endpoint 127.0.0.1:4318 --protocol http --insecure": {check: func(t *testing.T, x *exampleRun) {
			wantSpans(t, w.standIns.httpPlain.sessionSpans(), all)
		}},
		"records replay --endpoint 127.0.0.1:4317 --insecure --session 1735787045006000000": {check: func(t *testing.T, x *exampleRun) {
			wantSpans(t, w.standIns.grpcPlain.sessionSpans(), w.helpSpans(s1))
		}},
		"records replay --endpoint collector.example.com:4317 --cursor ~/.cache/otelrecords/sent": {check: func(t *testing.T, x *exampleRun) {
			wantCursor(t, x, filepath.Join(x.home, ".cache/otelrecords/sent"), "records replay --endpoint collector.example.com:4317 --cursor ~/.cache/otelrecords/sent")
		}},
		"records --dir /var/lib/otelrecords/host replay --endpoint collector.example.com:4317 --cursor /var/lib/otelrecords/sent": {check: func(t *testing.T, x *exampleRun) {
			wantCursor(t, x, filepath.Join(x.root, "var/lib/otelrecords/sent"), "records --dir /var/lib/otelrecords/host replay --endpoint collector.example.com:4317 --cursor /var/lib/otelrecords/sent")
		}},

		// pull: the sessions Jaeger holds, back as they were; of one
		// service, of the last day; those that compiled matmul_1024.
		"records pull --from https://jaeger.example.com": {store: "none", check: func(t *testing.T, x *exampleRun) {
			wantPulled(t, x, x.defaultStore(), w.ids)
		}},
		"records pull --from http://127.0.0.1:16686 --service build --since 24h": {store: "none", check: func(t *testing.T, x *exampleRun) {
			wantPulled(t, x, x.defaultStore(), []string{s3})
		}},
		"records pull --from https://jaeger.example.com --where compile.key=matmul_1024": {store: "none", check: func(t *testing.T, x *exampleRun) {
			wantPulled(t, x, x.defaultStore(), []string{s1, s3})
		}},
		// Then the report of the newest.
		"records --dir ./fleet pull --from https://jaeger.example.com && records --dir ./fleet report": {check: func(t *testing.T, x *exampleRun) {
			wantPulled(t, x, x.path("fleet"), w.ids)
			said, page, _ := strings.Cut(x.stdout, "\n")
			for strings.HasPrefix(page, "(") { // what else it says: the tallies it took
				_, page, _ = strings.Cut(page, "\n")
			}
			if !strings.HasPrefix(said, "pulled 4 sessions, 19 records, from ") {
				t.Errorf("the pull says %q", said)
			}
			wantReport(t, page, s4, s1)
		}},
		"records --dir ./fleet pull --from https://jaeger.example.com --service build": {check: func(t *testing.T, x *exampleRun) {
			wantPulled(t, x, x.path("fleet"), []string{s1, s2, s3})
		}},
		"records --dir ./fleet diff --session 1735787045006000000 --against-session 1735790645006000000": {
			after: "records --dir ./fleet pull --from https://jaeger.example.com --service build",
			check: func(t *testing.T, x *exampleRun) {
				wantPrefix(t, x.lines, "A  ./fleet  session "+s1, "B  ./fleet  session "+s2)
				wantDiffRow(t, x.stdout, "~  autotune  tune matmul autotune.key=matmul_1024", "winner: tiled → simd")
			},
		},

		// The stores as web pages: the address to open, where the pages
		// and their JSON list the sessions of the stores served; on every
		// address of the machine, said to be reachable from others.
		"records serve":                       {follow: w.serving(`^records: serving \S+/home/\.cache/otelrecords/default at http://127\.0\.0\.1:\d+/$`, w.ids...)},
		"records serve --dir ./build/records": {follow: w.serving(`^records: serving \./build/records at http://127\.0\.0\.1:\d+/$`, w.ids...)},
		"records serve --dir 'runners/*/records' --listen 0.0.0.0:8080": {
			follow: w.serving(`^records: serving 2 stores at http://localhost:\d+/$`, s1, s2, b1, s3, s4),
			check: func(t *testing.T, x *exampleRun) {
				if !strings.Contains(x.stderr, "which other machines may reach: records serve has no authentication") {
					t.Errorf("it does not say other machines may reach it")
				}
			},
		},
		"go run ./cmd/records serve": {clone: true, after: "go run ./examples/otel", follow: &following{lines: 1, then: func(t *testing.T, x *exampleRun) {
			w.serving(`^records: serving \S+ at http://127\.0\.0\.1:\d+/$`, serverSessions(t, x.defaultStore())...).then(t, x)
		}}},

		// A report of the newest session; of one; to standard output.
		"records report -o report.html": {check: func(t *testing.T, x *exampleRun) {
			wantReport(t, string(mustRead(t, x.path("report.html"))), s4, s1)
		}},
		"records report --session 1735787045006000000 -o build.html": {check: func(t *testing.T, x *exampleRun) {
			wantReport(t, string(mustRead(t, x.path("build.html"))), s1, s4)
		}},
		"records report --dir ./build/records > report.html": {check: func(t *testing.T, x *exampleRun) {
			wantReport(t, string(mustRead(t, x.path("report.html"))), s4, s1)
		}},

		// The README: the example recorded into the default store, beside
		// the sessions there, and read back; then read with go run.
		"go run ./examples/otel": {clone: true, check: func(t *testing.T, x *exampleRun) {
			if !regexp.MustCompile(`^cold run: \d+ changes, session kept with \d+ records in ` + regexp.QuoteMeta(x.defaultStore()) + "\n").MatchString(x.stdout) {
				t.Errorf("it does not say it kept its session in the default store")
			}
			got := serverSessions(t, x.defaultStore())
			if len(got) != len(w.ids)+1 || !slices.Equal(got[:len(w.ids)], w.ids) {
				t.Fatalf("the default store holds %q, want %q and the example's", got, w.ids)
			}
			// Read back: the store's sessions, then the newest's records.
			wantLines(t, summaryRows(x.lines), got)
			if newest := got[len(got)-1]; !strings.Contains(x.stdout, "\nthe newest session, "+newest+", in stamp order:\n") {
				t.Errorf("it does not read its session %s back", newest)
			}
		}},
		"go run ./cmd/records sessions": {clone: true, after: "go run ./examples/otel", check: func(t *testing.T, x *exampleRun) {
			rows := fieldsOf(x.lines[1:])
			var ids []string
			for _, f := range rows {
				ids = append(ids, f[0])
			}
			wantLines(t, ids, serverSessions(t, x.defaultStore()))
			if !slices.IsSorted(ids) || len(rows) != len(w.ids)+1 || !strings.Contains(x.lines[len(x.lines)-1], "example build") ||
				!strings.Contains(x.lines[len(x.lines)-1], "autotune=") {
				t.Errorf("want the sessions oldest first, the example's last with its records per kind")
			}
		}},
		"go run ./cmd/records dump --kind autotune": {clone: true, after: "go run ./examples/otel", check: func(t *testing.T, x *exampleRun) {
			for _, f := range fieldsOf(x.lines) {
				if f[3] != "autotune" {
					t.Errorf("a %s record", f[3])
				}
			}
			if n := countRecords(t, x, "autotune"); len(x.lines) != n {
				t.Errorf("%d records, want the store's %d tunes", len(x.lines), n)
			}
		}},
		"go run ./cmd/records dump --json": {clone: true, after: "go run ./examples/otel", check: func(t *testing.T, x *exampleRun) {
			rs := decodeLines(t, x.stdout)
			if n := countRecords(t, x, ""); len(rs) != n {
				t.Errorf("%d records, want the store's %d", len(rs), n)
			}
			fields := strings.Fields("kind session seq offset_ns name wall_ns attributes status events trace_id span_id parent_span_id scope span_kind links effect")
			for _, r := range rs {
				if got := slices.Sorted(maps.Keys(r)); !slices.Equal(got, slices.Sorted(slices.Values(fields))) {
					t.Errorf("a record with the fields %q, want FORMAT.md §8.2's %q", got, fields)
					break
				}
			}
		}},
	}
}

// sessionsTable checks records sessions: a row per session of the help
// store, oldest first, with its label and its records per kind.
func (w *exampleWorld) sessionsTable(t *testing.T, x *exampleRun) {
	if len(x.lines) == 0 || !strings.HasPrefix(x.lines[0], "ID ") {
		t.Fatalf("no header")
	}
	rows := x.lines[1:]
	var ids []string
	for _, f := range fieldsOf(rows) {
		ids = append(ids, f[0])
	}
	wantLines(t, ids, w.ids)
	for i, r := range w.runs {
		if i >= len(rows) {
			break
		}
		for kind, n := range r.root.kinds() {
			if !strings.Contains(rows[i], fmt.Sprintf("%s=%d", kind, n)) || !strings.Contains(rows[i], r.label) {
				t.Errorf("the row of %s does not say %s=%d, %s: %s", w.ids[i], kind, n, r.label, rows[i])
			}
		}
	}
}

// serving runs records serve until it printed the address to open
// (saying matches said), and checks its pages there: /sessions, and
// /api/sessions's JSON, list the sessions ids.
func (w *exampleWorld) serving(said string, ids ...string) *following {
	return &following{lines: 1, then: func(t *testing.T, x *exampleRun) {
		if !regexp.MustCompile(said).MatchString(x.lines[0]) {
			t.Fatalf("it says %q, want %s", x.lines[0], said)
		}
		url := x.lines[0][strings.LastIndex(x.lines[0], " ")+1:]
		page := httpGet(t, url+"sessions")
		for _, id := range ids {
			if !strings.Contains(page, id) {
				t.Errorf("its page of sessions does not list %s", id)
			}
		}
		var got []string
		for _, s := range decodeLines(t, httpGet(t, url+"api/sessions")) {
			got = append(got, fmt.Sprint(s["id"]))
		}
		slices.Sort(got)
		wantLines(t, got, slices.Sorted(slices.Values(ids)))
	}}
}

// httpGet returns the body of a page, which must be there.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v\n%s", url, resp.Status, err, body)
	}
	return string(body)
}

// wantRecords checks JSON records: every record of session, in stamp
// order, by name.
func wantRecords(t *testing.T, lines []string, session string, names []string) {
	t.Helper()
	var got, want []string
	for _, r := range decodeLines(t, strings.Join(lines, "\n")) {
		got = append(got, fmt.Sprint(r["session"], " ", r["seq"], " ", r["name"]))
	}
	for seq, name := range names {
		want = append(want, fmt.Sprintf("%s %d %s", session, seq, name))
	}
	wantLines(t, got, want)
}

// showTable checks a table of autotune records: autotune.key, tried and
// winner among its columns, and its rows by session and winner.
func showTable(t *testing.T, lines []string, want []string) {
	t.Helper()
	if len(lines) == 0 {
		t.Fatal("no output")
	}
	head := strings.Fields(lines[0])
	for _, col := range []string{"autotune.key", "tried", "winner"} {
		if !slices.Contains(head, col) {
			t.Errorf("no column %s: %q", col, lines[0])
		}
	}
	var got []string
	for _, f := range fieldsOf(lines[1:]) {
		got = append(got, f[0]+" "+f[len(f)-1])
	}
	wantLines(t, got, want)
}

// timelineSessions returns the sessions whose trees a timeline shows.
func timelineSessions(lines []string) []string {
	var ids []string
	for _, l := range lines {
		if id, ok := strings.CutPrefix(l, "session "); ok {
			ids = append(ids, strings.Fields(id)[0])
		}
	}
	return ids
}

// treeRows returns the RECORD column of a timeline's rows: a record's
// name, under its parent's.
func treeRows(lines []string) []string {
	var rows []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 5 || f[0] == "OFFSET" || f[0] == "session" {
			continue
		}
		// OFFSET WALL EFFECT KIND, then the record.
		rest := l
		for range 4 {
			rest = strings.TrimLeft(rest, " ")
			rest = rest[strings.IndexByte(rest, ' '):]
		}
		rows = append(rows, strings.TrimSpace(rest))
	}
	return rows
}

// summaryRows returns the sessions of a summary's table.
func summaryRows(lines []string) []string {
	var ids []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && regexp.MustCompile(`^\d{19}$`).MatchString(f[0]) {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// criticalPaths returns the sessions whose critical path a summary shows.
func criticalPaths(lines []string) []string {
	var ids []string
	for _, l := range lines {
		if m := regexp.MustCompile(`^critical path of session (\d+):`).FindStringSubmatch(l); m != nil {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// diffRows returns the rows of a diff's table of differences.
func diffRows(out string) []string {
	var rows []string
	for l := range strings.Lines(out) {
		if len(l) > 3 && strings.Contains("~+-", l[:1]) && l[1:3] == "  " {
			rows = append(rows, strings.TrimSpace(l))
		}
	}
	return rows
}

// wantDiffRow checks that a diff shows the row that starts with prefix,
// its difference being difference.
func wantDiffRow(t *testing.T, out, prefix, difference string) {
	t.Helper()
	for _, r := range diffRows(out) {
		if strings.HasPrefix(r, prefix) {
			if !strings.HasSuffix(r, difference) {
				t.Errorf("the row %q, want its difference %q", r, difference)
			}
			return
		}
	}
	t.Errorf("no row %q", prefix)
}

// wantSlower checks what diff's gate names, on standard error, as slower.
func wantSlower(t *testing.T, stderr string, want []string) {
	t.Helper()
	_, list, ok := strings.Cut(strings.TrimSpace(stderr), "longer than A: ")
	if !ok {
		t.Fatalf("the gate names nothing slower: %q", stderr)
	}
	var got []string
	for _, m := range strings.Split(list, "; ") {
		kind, rest, _ := strings.Cut(m, " ")
		name, _, _ := strings.Cut(rest, " compile.key=")
		name, _, _ = strings.Cut(name, " (")
		got = append(got, kind+" "+name)
	}
	wantLines(t, got, want)
}

// wantWhy checks the rows of why: each record's session and the first
// word of its reason.
func wantWhy(t *testing.T, lines []string, want []string) {
	t.Helper()
	var got []string
	for _, f := range fieldsOf(lines[min(1, len(lines)):]) {
		if len(f) > 3 {
			got = append(got, f[0]+" "+f[3])
		}
	}
	wantLines(t, got, want)
}

// wantWatched checks that watch printed the records dump prints, in any
// order (a mark is written after what it holds), columns aligned as they
// come, and without dump's EFFECT column.
func wantWatched(t *testing.T, lines []string, dump string) {
	t.Helper()
	norm := func(ls []string, effect bool) []string {
		var out []string
		for _, f := range fieldsOf(ls) {
			if i := slices.IndexFunc(f, func(s string) bool { return s == "observed" || s == "changed" }); effect && i > 4 {
				f = slices.Delete(f, i, i+1)
			}
			out = append(out, strings.Join(f, " "))
		}
		slices.Sort(out)
		return out
	}
	wantLines(t, norm(lines, false), norm(strings.Split(dump, "\n"), true))
}

// wantPruned checks what prune printed (head, then a row per session that
// went) and the sessions left.
func wantPruned(t *testing.T, x *exampleRun, head string, went, left []string) {
	t.Helper()
	if len(x.lines) < 2 || !strings.HasPrefix(x.lines[0], head+" ") {
		t.Fatalf("it does not say %q", head)
	}
	wantLines(t, summaryRows(x.lines), went)
	wantLines(t, serverSessions(t, x.defaultStore()), left)
}

// wantSpans checks what a stand-in was sent: spans by session.
func wantSpans(t *testing.T, got, want map[string]int) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("sent spans by session %v, want %v", got, want)
	}
}

// wantCursor checks a replay with --cursor FILE: it sent every record,
// FILE names every session, and the same line run again sends nothing.
func wantCursor(t *testing.T, x *exampleRun, file, line string) {
	t.Helper()
	wantSpans(t, x.w.standIns.grpcTLS.sessionSpans(), x.w.helpSpans())
	cursor := string(mustRead(t, file))
	for _, id := range x.w.ids {
		if !strings.Contains(cursor, "\n"+id+" ") {
			t.Errorf("the cursor does not name session %s:\n%s", id, cursor)
		}
	}
	x.w.standIns.reset()
	if x.runLine(t, line, nil, false); x.code != 0 {
		t.Fatalf("again: exit %d\n%s", x.code, x.stderr)
	}
	wantSpans(t, x.w.standIns.grpcTLS.sessionSpans(), map[string]int{})
}

// wantPulled checks a pull into dir: the sessions want, each as the help
// store holds it, record for record.
func wantPulled(t *testing.T, x *exampleRun, dir string, want []string) {
	t.Helper()
	wantLines(t, serverSessions(t, dir), want)
	for _, id := range want {
		got := x.records(t, "dump", "--json", "--dir", dir, "--session", id)
		if held := x.records(t, "dump", "--json", "--dir", x.w.stores["help"], "--session", id); got != held {
			t.Errorf("session %s pulled differs from the store replayed:\n%s", id, firstDiff(held, got))
		}
	}
}

// wantReport checks a report: one HTML page, of the session of, and not
// of not.
func wantReport(t *testing.T, page, of, not string) {
	t.Helper()
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Errorf("not one HTML page: %.80q", page)
	}
	if !strings.Contains(page, of) || strings.Contains(page, not) {
		t.Errorf("want the report of session %s (not %s)", of, not)
	}
}

// countRecords returns how many records of kind ("" every kind) the
// default store holds, by what sessions --json counts.
func countRecords(t *testing.T, x *exampleRun, kind string) int {
	t.Helper()
	n := 0
	for _, s := range decodeLines(t, x.records(t, "sessions", "--json", "--dir", x.defaultStore())) {
		for k, c := range s["records"].(map[string]any) {
			if kind == "" || k == kind {
				n += int(mustNumber(t, c))
			}
		}
	}
	return n
}

// wantLines checks lines against want, line for line.
func wantLines(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// wantPrefix checks that the first lines start with want, line for line.
func wantPrefix(t *testing.T, lines []string, want ...string) {
	t.Helper()
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d does not start with %q", i+1, w)
		}
	}
}

// fieldsOf splits each line into its fields, leaving out empty lines.
func fieldsOf(lines []string) [][]string {
	var out [][]string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func mustNumber(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v is no number", v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// total adds up records by session.
func total(by map[string]int) int {
	n := 0
	for _, c := range by {
		n += c
	}
	return n
}
