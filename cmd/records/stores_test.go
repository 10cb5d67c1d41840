package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// holdEnv, when set, makes the test binary a process that opens the
// store in the directory it names for writing, says "held" on stdout,
// and holds it until its stdin closes: another process's store, busy.
const holdEnv = "RECORDS_TEST_HOLD"

// holdStore is the holding process (see holdEnv). It opens the store as a
// program that does not let go would: badgerstore.Open, not the
// exporter's writer, which lets go when asked.
func holdStore(dir string) int {
	st, err := badgerstore.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	if err := st.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// holdInAnotherProcess holds the store in dir from another process until
// release is called, or the test ends. That process opens the store as a
// program that owns it does (badgerstore.Open), so it does not let go when
// a reader asks.
func holdInAnotherProcess(t *testing.T, dir string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("the holding process: %v", err)
			}
		})
	}
	t.Cleanup(release)
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the holding process said %q (%v)", line, err)
	}
	return release
}

// buildOnRunner records one build, as a CI runner would, into the store
// in dir through the exporter: a mark holding a compile that changed
// something, labelled label.
func buildOnRunner(t *testing.T, dir, label string) {
	t.Helper()
	exp, err := exporter.New(dir, exporter.WithLabel(label))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "ci"), attribute.String("host.name", label))))
	tr := tp.Tracer("example.com/ci")
	ctx, build := tr.Start(context.Background(), "build "+label)
	_, c := tr.Start(ctx, "compile", spanbridge.Record("compile", attribute.String("compile.key", "k-"+label), spanbridge.Changed())...)
	c.End()
	build.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// labels returns the labels records sessions --json prints, in order.
func labels(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, s := range decodeLines(t, out) {
		got = append(got, fmt.Sprint(s["label"]))
	}
	return got
}

// Stores copied from runners read as one: --dir repeated or a glob, every
// view over the union, each session as its own store shows it; the same
// store named twice is read once.
func TestManyStoresReadAsOne(t *testing.T) {
	root := t.TempDir()
	dirs := map[string]string{}
	for _, runner := range []string{"runner-1", "runner-2", "runner-3"} {
		dirs[runner] = filepath.Join(root, "runners", runner, "records")
		buildOnRunner(t, dirs[runner], runner)
	}
	if got := labels(t, mustRun(t, "--dir", dirs["runner-1"], "--dir", dirs["runner-3"], "sessions", "--json")); !slices.Equal(got, []string{"runner-1", "runner-3"}) {
		t.Errorf("two --dir: sessions %q", got)
	}
	glob := filepath.Join(root, "runners", "*", "records")
	if got := labels(t, mustRun(t, "--dir", glob, "sessions", "--json")); !slices.Equal(got, []string{"runner-1", "runner-2", "runner-3"}) {
		t.Errorf("--dir %s: sessions %q", glob, got)
	}
	if got := labels(t, mustRun(t, "--dir", glob, "--dir", dirs["runner-2"], "sessions", "--json")); len(got) != 3 {
		t.Errorf("a store named twice: sessions %q, want each once", got)
	}
	// Each session dumps as its own store dumps it.
	var want string
	for _, runner := range []string{"runner-1", "runner-2", "runner-3"} {
		want += mustRun(t, "--dir", dirs[runner], "dump", "--json")
	}
	if got := mustRun(t, "--dir", glob, "dump", "--json"); got != want {
		t.Errorf("dump of the union:\n%s\nwant each store's:\n%s", got, want)
	}
	// The answers read the union too: cost counts the three compiles, a
	// diff compares runners with another.
	if out := mustRun(t, "--dir", glob, "show", "compile", "--json"); strings.Count(out, "\n") != 3 {
		t.Errorf("show compile over three stores:\n%s", out)
	}
	if out := mustRun(t, "--dir", dirs["runner-1"], "--dir", dirs["runner-2"], "diff", "--against", dirs["runner-3"]); !strings.Contains(out, dirs["runner-1"]+" + "+dirs["runner-2"]) {
		t.Errorf("diff of two runners against a third does not name both:\n%s", out)
	}
	code, _, errOut := runCLI(t, "--dir", filepath.Join(root, "nothing", "*"), "sessions")
	if code != exitUsage || !strings.Contains(errOut, "matches no directory") {
		t.Errorf("a glob matching nothing: exit %d, %q", code, errOut)
	}
}

// A damaged store, a busy one (held by another process) and a missing one
// among several are each named, and the others read; when none can be
// read, the command fails.
func TestManyStoresNameTheUnreadable(t *testing.T) {
	root := t.TempDir()
	good, damaged, busy := filepath.Join(root, "good"), filepath.Join(root, "damaged"), filepath.Join(root, "busy")
	for _, dir := range []string{good, damaged, busy} {
		buildOnRunner(t, dir, filepath.Base(dir))
	}
	if err := os.Truncate(filepath.Join(damaged, "MANIFEST"), 12); err != nil {
		t.Fatal(err)
	}
	holdInAnotherProcess(t, busy)
	missing := filepath.Join(root, "missing")

	code, out, errOut := runCLI(t, "--dir", good, "--dir", damaged, "--dir", busy, "--dir", missing, "--wait", "300ms", "sessions", "--json")
	if code != exitOK || !slices.Equal(labels(t, out), []string{"good"}) {
		t.Errorf("exit %d, sessions %q; want 0 and the good store's", code, labels(t, out))
	}
	for _, want := range []string{
		"records: warning: left out: ",
		filepath.Join(damaged, "MANIFEST"),
		"records doctor",
		"the store at " + busy + " is busy",
		"no store at " + missing,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := strings.Count(errOut, "left out: "); n != 3 {
		t.Errorf("%d stores left out, want 3:\n%s", n, errOut)
	}

	code, out, errOut = runCLI(t, "--dir", damaged, "--dir", missing, "dump")
	if code != exitError || out != "" || !strings.Contains(errOut, "none of the 2 stores --dir names could be read") {
		t.Errorf("no store readable: exit %d, %q %q", code, out, errOut)
	}
}

// The commands that change a store, or follow one, refuse several, and
// change nothing.
func TestManyStoresRefusedByWriters(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	buildOnRunner(t, a, "a")
	buildOnRunner(t, b, "b")
	before := mustRun(t, "--dir", a, "--dir", b, "dump", "--json")
	for _, args := range [][]string{
		{"prune", "--keep", "1"},
		{"prune", "--all", "--dry-run"},
		{"compact"},
		{"doctor"},
		{"doctor", "--check"},
		{"watch"},
		{"pull", "--from", "https://jaeger.example.com"},
	} {
		code, _, errOut := runCLI(t, append([]string{"--dir", a, "--dir", b}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "records "+args[0]+" works on one store, and --dir names 2") {
			t.Errorf("records %s over two stores: exit %d, %q", strings.Join(args, " "), code, errOut)
		}
		code, _, errOut = runCLI(t, append([]string{"--dir", filepath.Join(root, "*")}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "works on one store") {
			t.Errorf("records %s over a glob: exit %d, %q", strings.Join(args, " "), code, errOut)
		}
	}
	if after := mustRun(t, "--dir", a, "--dir", b, "dump", "--json"); after != before {
		t.Errorf("the stores changed:\n%s\nwere\n%s", after, before)
	}
}
