package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// exampleStarts are the pretend clocks of the three runs of examples/otel
// whose store docs/CLI.md shows: the same build, a quarter of an hour and
// then a day apart.
var exampleStarts = []string{"2026-12-02T16:48:08Z", "2026-12-02T17:03:11Z", "2026-12-03T09:15:42Z"}

// writeExampleStore runs the example program three times into one store,
// its cache deleted before the second and third runs so that each does
// all its work again, as docs/CLI.md says; each command of watches (records
// watch ...) follows the store meanwhile, from before it exists. It
// returns the store's directory and what each watch printed, by its
// arguments joined by spaces.
func writeExampleStore(t *testing.T, watches [][]string) (string, map[string]string) {
	t.Helper()
	example := filepath.Join(t.TempDir(), "otel")
	// By import path: the example is in the library's module, which this
	// module requires (through go.work or its replace line).
	build := exec.Command("go", "build", "-o", example, "github.com/otelrecords/otelrecords/examples/otel")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/otel: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "exstore")
	// The directory is there, the store not yet: records watch waits for
	// a store, and refuses a --dir that does not exist.
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}

	type watching struct {
		args []string
		cmd  *exec.Cmd
		out  *lockedBuffer
	}
	var ws []watching
	for _, args := range watches {
		if strings.Contains(strings.Join(args, " "), "--dir") {
			t.Fatalf("records %s: a watch of the example store reads it by default, without --dir", strings.Join(args, " "))
		}
		w := watching{args: args, cmd: recordsProcess(t, append(args, "--dir", dir)...), out: new(lockedBuffer)}
		w.cmd.Stdout, w.cmd.Stderr = w.out, w.out // as a terminal shows them
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.cmd.Process.Kill(); w.cmd.Wait() })
		// Its first look finds no store: from then on, every record is
		// new to it.
		waitFor(t, "records "+strings.Join(args, " ")+" to look for the store", func() bool {
			return strings.Contains(w.out.String(), "waiting for a store")
		})
		ws = append(ws, w)
	}

	for i, start := range exampleStarts {
		if i > 0 {
			if err := os.RemoveAll(dir + "-cache"); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command(example, "-dir", dir, "-clock", start).CombinedOutput(); err != nil {
			t.Fatalf("examples/otel -clock %s: %v\n%s", start, err, out)
		}
	}

	watched := map[string]string{}
	for _, w := range ws {
		// watch prints a record as dump does, once it has read it.
		want := strings.Count(mustRun(t, append([]string{"dump", "--dir", dir}, w.args[1:]...)...), "\n")
		waitFor(t, "records "+strings.Join(w.args, " ")+" to print what dump prints", func() bool {
			return strings.Count(w.out.String(), "\n")-strings.Count(w.out.String(), "records: ") >= want
		})
		if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := w.cmd.Wait(); err != nil {
			t.Fatalf("records %s ended with %v after an interrupt; want status 0\n%s", strings.Join(w.args, " "), err, w.out)
		}
		watched[strings.Join(w.args, " ")] = w.out.String()
	}
	pinHosts(t, dir)
	return dir, watched
}

// waitFor waits up to 30 seconds for done, polling, and fails the test
// naming what it waited for if it does not come.
func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
	}
}

// lockedBuffer is a buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
