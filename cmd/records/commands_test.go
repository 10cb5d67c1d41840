package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// writeManyRecords writes one session of n records, in one store, for the
// tests that need more than a page of them.
func writeManyRecords(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "many")
	writeSessions(t, dir, goldenStart1, 1, n)
	return dir
}

// writeSessions writes sessions of n records each, an hour apart from
// start, into the store in dir.
func writeSessions(t *testing.T, dir string, start time.Time, sessionsN, n int) {
	t.Helper()
	for s := range sessionsN {
		at := start.Add(time.Duration(s) * time.Hour)
		record(t, dir, at, fmt.Sprintf("session %d", s), nil, func(rec *testsupport.Session) {
			for i := range n {
				st := rec.Stamp(at.Add(time.Duration(i) * time.Microsecond))
				rec.Put("compile", sessions.Changed, st, sessions.Record{
					Name:       fmt.Sprintf("compile kernel %d", i),
					Wall:       time.Duration(i%50) * time.Microsecond,
					Attributes: sessions.Attrs{str("kernel", fmt.Sprintf("kernel_%d", i)), integer("bytes", i)},
				})
				if i%4096 == 0 {
					if err := rec.Recorder().Flush(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// newCommands are the commands of this file's tests, with the arguments
// each needs besides --dir.
var newCommands = [][]string{
	{"summary"},
	{"timeline"},
	{"show", "compile"},
	{"diff", "--against", "."},
	{"prune", "--keep", "1"},
	{"compact"},
	{"export", "--format", "chrome"},
	{"report"},
	{"why", "autotune", "autotune.key=matmul"},
	{"cost"},
}

func TestNewCommandsMissingStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never", "recorded")
	for _, args := range newCommands {
		args = append(args, "--dir", dir)
		code, out, errOut := runCLI(t, args...)
		if want := "records: no store at " + dir + " (nothing has been recorded there yet)\n"; code != 1 || errOut != want || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
		if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v created %s", args, filepath.Dir(dir))
		}
	}
	// diff names the other store when that one is missing.
	a := writeGoldenStore(t)
	code, _, errOut := runCLI(t, "diff", "--dir", a, "--against", dir)
	if code != 1 || !strings.Contains(errOut, "no store at "+dir) {
		t.Errorf("diff against a missing store: exit %d, stderr %q", code, errOut)
	}
}

func TestNewCommandsBusyStore(t *testing.T) {
	dir := writeGoldenStore(t)
	writer, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range newCommands {
		args = append(args, "--dir", dir, "--wait", "0s")
		code, out, errOut := runCLI(t, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "is busy: another process holds it open") {
			t.Errorf("%v beside a writer: exit %d, stdout %q, stderr %q; want exit 1, busy", args, code, out, errOut)
		}
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}

	// A reader lets the other readers in, but not prune or compact, which
	// need the store to themselves.
	reader, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	mustRun(t, "summary", "--dir", dir)
	for _, args := range [][]string{{"prune", "--keep", "1"}, {"compact"}} {
		args = append(args, "--dir", dir, "--wait", "0s")
		code, _, errOut := runCLI(t, args...)
		if want := "records: the store at " + dir + " is busy: another process holds it open; try again when it is done\n"; code != 1 || !strings.HasSuffix(errOut, want) {
			t.Errorf("%v beside a reader: exit %d, stderr %q; want %q", args, code, errOut, want)
		}
	}
}

func TestNewCommandsUsageErrors(t *testing.T) {
	dir := writeGoldenStore(t)
	for _, args := range [][]string{
		{"summary", "--top", "-1"},
		{"summary", "--session", "yesterday"},
		{"timeline", "extra"},
		{"show"},
		{"show", "sessions"},
		{"show", "compile", "--where", "no-equals-sign"},
		{"diff"},
		{"prune"},
		{"prune", "--keep", "-1"},
		{"prune", "--keep", "0"},
		{"prune", "--keep", "1", "--all"},
		{"compact", "--keep", "1"},
		{"report", "--format", "pdf"},
		{"why", "autotune"},
		{"cost", "--top", "-1"},
		{"watch", "--kind", "sessions"},
		{"watch", "extra"},
		{"why", "autotune", "no-equals-sign"},
		{"why", "sessions", "key=value"},
	} {
		// The hint names the subcommand's help, not the root's.
		hint := "\nRun 'records " + args[0] + " --help' for usage.\n"
		args = append(args, "--dir", dir)
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "records: ") || !strings.HasSuffix(errOut, hint) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and the hint %q", args, code, out, errOut, hint)
		}
	}
}

func TestNoSuchSession(t *testing.T) {
	dir := writeGoldenStore(t)
	for _, args := range [][]string{
		{"summary"}, {"timeline"}, {"report"}, {"export", "--format", "chrome"}, {"export", "--format", "otlp-json"},
		// dump and show printed nothing (show its header) and exit 0, as
		// for a session that holds none of the kind asked.
		{"dump"}, {"dump", "--json"}, {"dump", "--kind", "compile"}, {"show", "compile"}, {"show", "compile", "--json"},
	} {
		args = append(args, "--dir", dir, "--session", "7")
		code, out, errOut := runCLI(t, args...)
		if want := "records: the store has no session 7 (records sessions lists them)\n"; code != 1 || errOut != want || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
	}
	// A session the store has, holding no record of the kind asked, is
	// no mistake: nothing to print.
	if code, out, errOut := runCLI(t, "dump", "--dir", dir, "--kind", "bench", "--session", "1735790645006000000"); code != 0 || out != "" || errOut != "" {
		t.Errorf("dump --kind bench of a session with none: exit %d, stdout %q, stderr %q; want exit 0 and nothing", code, out, errOut)
	}
}

func TestNewCommandsHelp(t *testing.T) {
	for _, c := range newCommands {
		out := mustRun(t, c[0], "--help")
		for _, want := range []string{"Usage:", "Examples:", "--dir", "records " + c[0]} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q:\n%s", c[0], want, out)
			}
		}
	}
}

// TestJSONAnyBytes runs every command that prints JSON on a store whose
// records hold bytes that are not UTF-8 and control characters: every line
// is valid JSON.
func TestJSONAnyBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	bad := "\xff\xfe \x00\x1b[2J \u2028 </script>"
	recordSteps(t, dir, goldenStart1, bad, sessions.Attrs{str(bad, bad)}, []step{
		{0, sessions.MarksKind, sessions.Observed, sessions.Record{Name: bad, Wall: 2 * time.Millisecond}},
		{time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: bad, Wall: time.Millisecond,
			Attributes: sessions.Attrs{str(bad, bad), str("key", bad)}, Status: sessions.Status{Code: "error", Description: bad},
			Events: []sessions.Event{{Name: bad, Attributes: sessions.Attrs{str(bad, bad)}}}}},
	})
	for _, args := range [][]string{
		{"summary", "--json"},
		{"timeline", "--json"},
		{"show", "compile", "--json"},
		{"diff", "--against", dir, "--json", "--ignore", "nothing"},
		{"prune", "--all", "--dry-run", "--json"},
	} {
		out := mustRun(t, append(args, "--dir", dir)...)
		for line := range strings.Lines(out) {
			if !json.Valid([]byte(line)) {
				t.Errorf("%v: invalid JSON line %q", args, line)
			}
		}
	}
	// And text output carries no control character.
	for _, args := range [][]string{{"summary"}, {"timeline"}, {"show", "compile"}} {
		out := mustRun(t, append(args, "--dir", dir)...)
		if strings.ContainsAny(strings.ReplaceAll(out, "\n", ""), "\x00\x1b\u2028") {
			t.Errorf("%v: control characters in text output %q", args, out)
		}
	}
}

// TestCompactGivesSpaceBack prunes a store and compacts it: the space the
// pruned sessions held comes back, and what was kept reads as before.
func TestCompactGivesSpaceBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeSessions(t, dir, goldenStart1, 3, 5000)
	before := mustRun(t, "show", "compile", "--dir", dir, "--session", sessions.SessionID(goldenStart1.Add(2*time.Hour).UnixNano()).String())
	if out := mustRun(t, "prune", "--dir", dir, "--keep", "1"); !strings.HasPrefix(out, "pruned 2 sessions (10000 records), and kept 1:") {
		t.Errorf("prune printed %q", out)
	}
	var sizes api.Compact
	if err := json.Unmarshal([]byte(mustRun(t, "compact", "--dir", dir, "--json")), &sizes); err != nil {
		t.Fatal(err)
	}
	if sizes.After <= 0 || sizes.After >= sizes.Before || sizes.Freed != sizes.Before-sizes.After {
		t.Errorf("compact: %+v; want the size to shrink", sizes)
	}
	if after := mustRun(t, "show", "compile", "--dir", dir); after != before {
		t.Error("the kept session reads differently after prune and compact")
	}
}
