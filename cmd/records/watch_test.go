package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// runEnv, when set, makes the test binary the records command, with the
// arguments it holds (one per line): tests run it as a process of its
// own, to send it signals.
const runEnv = "RECORDS_TEST_RUN"

func TestMain(m *testing.M) {
	if args := os.Getenv(runEnv); args != "" {
		os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	if dir := os.Getenv(holdEnv); dir != "" {
		os.Exit(holdStore(dir))
	}
	os.Exit(m.Run())
}

// recordsProcess starts the records command as a process of its own.
func recordsProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runEnv+"="+strings.Join(args, "\n"))
	return cmd
}

// TestWatch follows a store while a program writes it, from another
// process: every record shows within about a second of being flushed,
// the writer's ForceFlush stays well under a second while watched, and
// an interrupt ends watch at once with status 0.
func TestWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("watches for a few seconds")
	}
	dir := filepath.Join(t.TempDir(), "store")
	exp, err := exporter.New(dir, exporter.WithLabel("watched"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer("watch-test")
	ctx := context.Background()
	write := func(i int) time.Duration {
		t.Helper()
		opts := spanbridge.Record("work")
		if i == 0 {
			opts = spanbridge.Record("work", spanbridge.Changed()) // keeps the session
		}
		_, span := tracer.Start(ctx, fmt.Sprint("step ", i), opts...)
		span.End()
		began := time.Now()
		if err := tp.ForceFlush(ctx); err != nil {
			t.Fatal(err)
		}
		return time.Since(began)
	}
	write(0)

	watch := recordsProcess(t, "watch", "--dir", dir, "--json")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	watch.Stderr = &stderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()

	var (
		mu      sync.Mutex
		arrived = map[string]time.Time{}
		order   []string
	)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var rec struct{ Kind, Name string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Kind != "work" {
				t.Errorf("watch printed %q", sc.Text())
				continue
			}
			mu.Lock()
			arrived[rec.Name] = time.Now()
			order = append(order, rec.Name)
			mu.Unlock()
		}
	}()

	// Write for a while, a record every 300ms; watch starts meanwhile, and
	// prints what is written once it has looked at the store.
	const n = 15
	flushed := map[string]time.Time{}
	var slowest time.Duration
	for i := 1; i <= n; i++ {
		took := write(i)
		slowest = max(slowest, took)
		flushed[fmt.Sprint("step ", i)] = time.Now()
		time.Sleep(300 * time.Millisecond)
	}
	if slowest >= time.Second {
		t.Errorf("a ForceFlush took %v while watched; want well under a second", slowest)
	}
	last := fmt.Sprint("step ", n)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		_, ok := arrived[last]
		mu.Unlock()
		if ok {
			break
		}
	}

	mu.Lock()
	// Once watch prints, it prints every record after, in order.
	if len(order) < n/2 {
		t.Errorf("watch printed %d of the last %d records: %q (stderr %q)", len(order), n, order, stderr.String())
	}
	var latest time.Duration
	for i, name := range order {
		if want := fmt.Sprint("step ", n-len(order)+1+i); name != want {
			t.Errorf("watch printed %q, want %q: every record once, in stamp order (%q)", name, want, order)
			break
		}
		latest = max(latest, arrived[name].Sub(flushed[name]))
	}
	mu.Unlock()
	// Twice a second, plus a loaded machine's slack.
	if latest > 2*time.Second {
		t.Errorf("a record showed %v after it was flushed; want about a second", latest)
	}
	t.Logf("slowest ForceFlush while watched: %v; slowest record to show: %v", slowest, latest)

	// Ctrl-C ends it at once, with status 0.
	if err := watch.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- watch.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch ended with %v after an interrupt (stderr %q); want status 0", err, stderr.String())
		}
	case <-time.After(3 * time.Second):
		t.Error("watch did not end within 3s of an interrupt")
	}
}

// A store held open when watch starts, by a process that does not let it
// go when asked (here for longer than one read waits), is waited for:
// watch says so, says when it gets in, and follows what is written from
// then on, rather than end on its first read as if the store could not be
// read.
func TestWatchWaitsForABusyStore(t *testing.T) {
	if testing.Short() {
		t.Skip("watches for a few seconds")
	}
	dir := filepath.Join(t.TempDir(), "store")
	buildOnRunner(t, dir, "before")
	release := holdInAnotherProcess(t, dir)

	watch := recordsProcess(t, "watch", "--dir", dir, "--json")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := watch.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	lines, said := make(chan string, 64), make(chan string, 8)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			said <- sc.Text()
		}
		close(said)
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- watch.Wait()
	}()
	// next returns the next line of ch, failing the test after d.
	next := func(ch <-chan string, d time.Duration, what string) string {
		t.Helper()
		select {
		case line, ok := <-ch:
			if !ok {
				t.Fatalf("watch ended before %s: %v", what, <-exited)
			}
			return line
		case <-time.After(d):
			t.Fatalf("watch did not %s within %v", what, d)
		}
		return ""
	}

	if line := next(said, 10*time.Second, "say the store is busy"); !strings.Contains(line, "is busy") || !strings.Contains(line, "watching begins once it is let go") {
		t.Errorf("watch said %q; want that the store is busy, and that it waits", line)
	}
	// Longer than one read waits for the store, and then some: watch
	// goes on waiting, and says nothing more.
	select {
	case line := <-said:
		t.Fatalf("watch said %q while the store was held", line)
	case line := <-lines:
		t.Fatalf("watch printed %q while the store was held", line)
	case <-time.After(stores.FollowOpenWait + time.Second):
	}
	release()
	if line := next(said, 10*time.Second, "say it got in"); line != "records: watching the store at "+dir {
		t.Errorf("watch said %q once the store was let go; want that it is watching", line)
	}

	// What is written from then on is printed; what was there before watch
	// got in is not.
	buildOnRunner(t, dir, "after")
	var got []string
	for !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "k-after") }) {
		got = append(got, next(lines, 15*time.Second, "print the record written after it got in"))
	}
	for _, line := range got {
		if strings.Contains(line, "k-before") {
			t.Errorf("watch printed a record there before it got in: %s", line)
		}
	}

	if err := watch.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := <-exited; err != nil {
		t.Errorf("watch ended with %v after an interrupt; want status 0", err)
	}
}
