package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestExamples runs every example the help and the documents show, as
// it is printed, through sh, and checks it prints what it says it prints
// (issue 43): each line of every command's Example, and each line of the
// ```sh blocks of README.md and docs/*.md that runs records (or go run
// ./cmd/records). `records` is on the PATH (this test binary, which is the
// command when RECORDS_TEST_RUN holds its arguments), jq is the machine's
// (Debian 12's 1.6 in CI, which reads numbers as doubles), and each
// example runs in a sandbox of its own:
//
//   - HOME is the sandbox's, and its default store
//     (~/.cache/otelrecords/default) the help store: a models build,
//     recorded by a program through exporter.New (examples_store_test.go),
//     whose sessions are the ones the examples name; or, for the examples
//     that prune, 23 builds; or none, for those that make one (pull, watch).
//   - The working directory holds the stores the examples name: ./build/records,
//     A, ./ci-stores/runner-1 and ./runners/linux/records (copies of the help
//     store), B, ./ci-store, ./ci-stores/runner-2 and ./runners/mac/records
//     (another machine's, one build); /var/lib/otelrecords/ is the sandbox's
//     var/lib/otelrecords/, holding host (the help store).
//   - The backends the examples name are the test's stand-ins
//     (examples_standins_test.go): the line sh runs has their addresses
//     where the example names collector.example.com, jaeger.example.com or
//     a well-known local port, and a free port where it has records serve
//     listen on 8080; nothing else changed.
//
// Each example has a check (exampleChecks) that asserts what it claims;
// an example without one fails the test, as does a check no example has
// any more, and a line of a ```sh block that is no records command must
// be one exampleElsewhere says is run by another test.
func TestExamples(t *testing.T) {
	w := newExampleWorld(t)
	checks := exampleChecks(w)
	used := map[string]bool{}
	var examples []example
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		n := 0
		for line := range strings.Lines(c.Example) {
			if line = strings.TrimSpace(line); line != "" {
				n++
				examples = append(examples, example{where: fmt.Sprintf("%s --help, example %d", c.CommandPath(), n), line: line, key: line})
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCommand())
	for _, path := range docPaths(t) {
		for _, ex := range shellExamples(t, path) {
			if !runHere(ex.key) {
				if _, ok := exampleElsewhere[ex.key]; !ok {
					t.Errorf("%s: %q is no records command, and exampleElsewhere does not say which test runs it", ex.where, ex.line)
				}
				used[ex.key] = true
				continue
			}
			examples = append(examples, ex)
		}
	}
	for _, ex := range examples {
		used[ex.key] = true
		c, ok := checks[ex.key]
		if !ok {
			t.Errorf("%s: %q has no check: add one to exampleChecks (examples_checks_linux_test.go), asserting what it says it prints", ex.where, ex.line)
			continue
		}
		t.Run(ex.where, func(t *testing.T) { w.run(t, ex, c) })
	}
	for _, key := range slices.Sorted(maps.Keys(checks)) {
		if !used[key] {
			t.Errorf("exampleChecks has a check for %q, which no help or document shows any more", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(exampleElsewhere)) {
		if !used[key] {
			t.Errorf("exampleElsewhere names %q, which no document shows any more", key)
		}
	}
}

// example is one line of an Example or of a document's ```sh block.
type example struct {
	where string // the command's help, or the document and its line
	line  string // as printed
	key   string // the line without its comment: what names its check
}

// exampleElsewhere are the lines of the documents' ```sh blocks that are
// not records commands, and the test that runs each.
var exampleElsewhere = map[string]string{
	"go test ./... ./cmd/records/... ./collector/...":                              "the README's test command, which runs this test: .ci/run runs it with -race, and ./... in a fresh clone with an empty module cache",
	"go mod edit -replace github.com/otelrecords/otelrecords=/path/to/otelrecords": "TestUserModuleBuildsAgainstAClone (internal/testkit/layout) runs it in a new user's module, /path/to/otelrecords a clone",
	"go mod tidy": "TestUserModuleBuildsAgainstAClone (internal/testkit/layout) runs it after the replace line",
	"go build -o otelcol-records ./collector/cmd/otelcol-records":          "TestCleanCloneStaysClean (internal/testkit/layout) builds it in a fresh clone",
	"./otelcol-records --config collector/cmd/otelcol-records/config.yaml": "TestShippedConfigsStartClean (collector/cmd/otelcol-records) starts otelcol-records on config.yaml",
}

// shellExamples returns the lines of the ```sh blocks of the document at
// path (```bash and ```shell too), but blank ones and comments.
func shellExamples(t *testing.T, path string) []example {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	in := false
	for i, line := range strings.Split(string(raw), "\n") {
		switch fence := strings.TrimSpace(line); {
		case !in && slices.Contains([]string{"```sh", "```bash", "```shell"}, fence):
			in = true
		case in && fence == "```":
			in = false
		case in && fence != "" && !strings.HasPrefix(fence, "#"):
			key, _, _ := strings.Cut(fence, " #")
			out = append(out, example{where: fmt.Sprintf("%s:%d", strings.TrimPrefix(path, "../../"), i+1), line: fence, key: strings.TrimSpace(key)})
		}
	}
	return out
}

// runHere reports whether this test runs a line of a document: one that
// runs records, or the example program that writes the store they read.
func runHere(line string) bool {
	return strings.HasPrefix(line, "records ") || strings.HasPrefix(line, "go run ./cmd/records ") || line == "go run ./examples/otel"
}

// exampleCheck is what an example needs, and what it must print.
type exampleCheck struct {
	store  string                            // the default store: the help store unless "many" or "none"
	clone  bool                              // it runs in the clone's root (the README's go run lines), not the sandbox's work directory
	after  string                            // an example run first, in the same sandbox: what this one reads
	status int                               // its exit status
	follow *following                        // it runs until interrupted (records watch, records serve)
	check  func(t *testing.T, x *exampleRun) // nil when follow.then checks it
}

// following is how an example that runs until interrupted is run: on a
// terminal, as a user runs it (jq writes each line as it comes there,
// where into a pipe it would hold them until it ends), and interrupted
// (the whole pipeline, as Ctrl-C does) once it printed lines lines.
type following struct {
	lines int
	store bool                              // it follows a store: the help store is written into the default store once it waits for one
	then  func(t *testing.T, x *exampleRun) // called before the interrupt, what it printed in x.lines
}

// exampleWorld is what every example's sandbox is made from: the stores,
// written once, the stand-ins, and records on the PATH.
type exampleWorld struct {
	now      time.Time
	stores   map[string]string // the stores written, by the runs they hold: help, other, many
	runs     []pretendRun      // the help store's
	ids      []string          // its sessions', oldest first
	many     []string          // the many store's sessions, oldest first
	bin      string            // holds records
	standIns *standIns
	clone    string   // the clone's root
	goEnv    []string // where the go command keeps what it built and fetched, whatever HOME is
}

func newExampleWorld(t *testing.T) *exampleWorld {
	t.Helper()
	w := &exampleWorld{now: time.Now(), stores: map[string]string{}}
	dir := t.TempDir()
	byDir := map[string]string{}
	for _, which := range []string{"help", "other", "many"} {
		w.stores[which] = filepath.Join(dir, which)
		byDir[w.stores[which]] = which
	}
	writeExampleRuns(t, w.now, byDir)
	w.runs = helpRuns(w.now)
	for _, r := range w.runs {
		w.ids = append(w.ids, r.id())
	}
	if got := serverSessions(t, w.stores["help"]); !slices.Equal(got, w.ids) {
		t.Fatalf("the help store holds sessions %q, want %q", got, w.ids)
	}
	w.many = serverSessions(t, w.stores["many"])
	w.standIns = newStandIns(t, []byte(mustRun(t, "export", "--format", "otlp-json", "--dir", w.stores["help"])))

	w.bin = t.TempDir()
	// GORACE: under -race, a process sleeps a second as it exits
	// (atexit_sleep_ms), for threads a command line has none of.
	script := fmt.Sprintf("#!/bin/sh\nGORACE=\"$GORACE %s\" %s=\"$(printf '%%s\\n' \"$@\")\" exec %q -test.run='^$'\n", noExitSleep, runEnv, os.Args[0])
	if err := os.WriteFile(filepath.Join(w.bin, "records"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.clone, err = filepath.Abs("../.."); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output(); err == nil {
		vals := strings.Split(strings.TrimSpace(string(out)), "\n")
		for i, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"} {
			if i < len(vals) {
				w.goEnv = append(w.goEnv, name+"="+vals[i])
			}
		}
	}
	return w
}

// helpSpans returns how many records each session of the help store has,
// by id: what replay sends of it.
func (w *exampleWorld) helpSpans(ids ...string) map[string]int {
	out := map[string]int{}
	for i, r := range w.runs {
		if len(ids) == 0 || slices.Contains(ids, w.ids[i]) {
			out[w.ids[i]] = r.root.count()
		}
	}
	return out
}

// exampleRun is an example's sandbox, and what the example did there.
type exampleRun struct {
	w                *exampleWorld
	root, home, work string
	env              []string
	replacer         *strings.Replacer
	stdout, stderr   string
	lines            []string // stdout's
	code             int
}

// defaultStore is the store records reads without --dir: $HOME's.
func (x *exampleRun) defaultStore() string {
	return filepath.Join(x.home, ".cache", "otelrecords", "default")
}

// path is a file of the working directory.
func (x *exampleRun) path(name string) string { return filepath.Join(x.work, name) }

// records runs the command in this process, on the store --dir names,
// which must be given: it checks what an example left.
func (x *exampleRun) records(t *testing.T, args ...string) string {
	t.Helper()
	if !slices.Contains(args, "--dir") {
		t.Fatalf("records %v: say which store", args)
	}
	return mustRun(t, args...)
}

// sandbox makes an example's sandbox.
func (w *exampleWorld) sandbox(t *testing.T, c exampleCheck) *exampleRun {
	t.Helper()
	root := t.TempDir()
	x := &exampleRun{w: w, root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	for _, d := range []string{x.home, x.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	switch c.store {
	case "":
		copyStore(t, w.stores["help"], x.defaultStore())
	case "many":
		copyStore(t, w.stores["many"], x.defaultStore())
	case "none":
	default:
		t.Fatalf("no store %q", c.store)
	}
	for name, from := range map[string]string{
		"work/build/records": "help", "work/A": "help", "work/ci-stores/runner-1": "help", "var/lib/otelrecords/host": "help",
		"work/B": "other", "work/ci-store": "other", "work/ci-stores/runner-2": "other",
		"work/runners/linux/records": "help", "work/runners/mac/records": "other",
	} {
		copyStore(t, w.stores[from], filepath.Join(root, name))
	}
	x.replacer = strings.NewReplacer(append(w.standIns.pairs(),
		"/var/lib/otelrecords/", filepath.Join(root, "var/lib/otelrecords")+"/",
		"0.0.0.0:8080", "0.0.0.0:0", // a port a test must not bind: a free one of every address, as the example's
	)...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "PATH" || name == runEnv || name == writerEnv || strings.HasPrefix(name, "XDG_") ||
			strings.HasPrefix(name, "OTELRECORDS_") || strings.HasPrefix(name, "OTEL_") || strings.HasPrefix(name, "GO") && slices.ContainsFunc(w.goEnv, func(e string) bool { return strings.HasPrefix(e, name+"=") }) {
			continue
		}
		x.env = append(x.env, kv)
	}
	x.env = append(x.env, "HOME="+x.home, "PATH="+w.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	x.env = append(x.env, w.goEnv...)
	return x
}

// run runs an example in a new sandbox, and checks it.
func (w *exampleWorld) run(t *testing.T, ex example, c exampleCheck) {
	if c.check == nil && (c.follow == nil || c.follow.then == nil) {
		t.Fatal("its check checks nothing")
	}
	for _, tool := range []string{"jq", "curl", "go"} {
		if !usesTool(ex.line, tool) {
			continue
		}
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: apt-get install %s; .ci/run installs jq): %q is not run", tool, tool, ex.line)
		}
		if tool == "jq" {
			if v, err := exec.Command("jq", "--version").Output(); err == nil {
				t.Logf("with %s", strings.TrimSpace(string(v)))
			}
		}
	}
	x := w.sandbox(t, c)
	if c.after != "" {
		w.standIns.reset()
		x.runLine(t, c.after, nil, c.clone)
		if x.code != 0 {
			t.Fatalf("%s, which this example reads, exited with %d:\n%s%s", c.after, x.code, x.stdout, x.stderr)
		}
	}
	w.standIns.reset()
	x.runLine(t, ex.line, c.follow, c.clone)
	if x.code != c.status {
		t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", x.code, c.status, x.stdout, x.stderr)
	}
	if c.check != nil {
		c.check(t, x)
	}
	if t.Failed() {
		t.Logf("%s\nran: %s\nstdout:\n%s\nstderr:\n%s", ex.where, x.replacer.Replace(ex.line), x.stdout, x.stderr)
	}
}

// pipeline splits a line into its commands.
var pipeline = regexp.MustCompile(`\||&&`)

// usesTool reports whether the line runs the program tool.
func usesTool(line, tool string) bool {
	for _, part := range pipeline.Split(line, -1) {
		if f := strings.Fields(part); len(f) > 0 && f[0] == tool {
			return true
		}
	}
	return false
}

// runLine runs line through sh in the sandbox, with the stand-ins'
// addresses in it, and keeps what it printed and its exit status; one
// that runs until interrupted, as f says.
func (x *exampleRun) runLine(t *testing.T, line string, f *following, inClone bool) {
	t.Helper()
	cmd := exec.Command("sh", "-c", x.replacer.Replace(line))
	cmd.Env, cmd.Dir = x.env, x.work
	// The CA of the collector and the Jaeger the examples name, as their
	// user trusts it: in the environment of every line, so that a line
	// with --insecure shows the flag wins over it.
	cmd.Env = append(slices.Clip(x.env), "OTEL_EXPORTER_OTLP_CERTIFICATE="+x.w.standIns.ca)
	if inClone {
		cmd.Dir = x.w.clone
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errOut := new(lockedBuffer)
	cmd.Stderr = errOut
	var stdout io.Reader
	if f != nil {
		controller, terminal := openPTY(t)
		defer controller.Close()
		defer terminal.Close()
		cmd.Stdout, stdout = terminal, controller
	} else {
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout = pipe
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited { // a check failed on the way: the pipeline must not outlive the test
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
	}()
	if f != nil {
		cmd.Stdout.(*os.File).Close() // the terminal is the pipeline's alone: it ends when they end
	}
	if f != nil && f.store {
		waitFor(t, line+" to wait for the store", func() bool { return strings.Contains(errOut.String(), "waiting for a store") })
		writeExampleRuns(t, x.w.now, map[string]string{x.defaultStore(): "help"})
	}
	timer := time.AfterFunc(time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	var out strings.Builder
	x.lines = nil
	sc := bufio.NewScanner(stdout)
	for sc.Scan() { // on a terminal, the end is an error (EIO) once the pipeline is gone
		l := colours.ReplaceAllString(strings.TrimSuffix(sc.Text(), "\r"), "")
		x.lines = append(x.lines, l)
		out.WriteString(l + "\n")
		if f != nil && len(x.lines) == f.lines {
			if f.then != nil {
				f.then(t, x)
			}
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		}
	}
	err := cmd.Wait()
	waited = true
	x.stdout, x.stderr, x.code = out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	if f != nil {
		x.code = 0 // an interrupt ends it: the pipeline's status is the signal's
		if len(x.lines) < f.lines {
			t.Errorf("printed %d lines before it was stopped, want %d: %v", len(x.lines), f.lines, err)
		}
	}
}

// colours are the escape sequences that colour a terminal's text.
var colours = regexp.MustCompile("\x1b\\[[0-9;]*m")
