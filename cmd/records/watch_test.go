package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
// watch says so once, and follows what is written once it gets in,
// rather than end on its first read as if the store could not be read.
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
	var stderr strings.Builder // read once watch has exited
	watch.Stderr = &stderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	lines := make(chan string, 64)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- watch.Wait()
	}()

	// Longer than one read waits for the store, and then some: watch
	// goes on waiting.
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("watch ended while the store was held: %v; stderr %q", <-exited, stderr.String())
		}
		t.Fatalf("watch printed %q while the store was held", line)
	case <-time.After(watchOpenWait + 1500*time.Millisecond):
	}
	release()

	// What is written once the store is let go is printed; what was there
	// before watch got in is not.
	buildOnRunner(t, dir, "after")
	var got []string
	timeout := time.After(15 * time.Second)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("watch ended: %v; printed %q; stderr %q", <-exited, got, stderr.String())
			}
			got = append(got, line)
			if strings.Contains(line, "k-after") {
				break wait
			}
		case <-timeout:
			t.Fatalf("watch did not print the record written after the store was let go within 15s; printed %q", got)
		}
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
	if n := strings.Count(stderr.String(), "is busy: another process holds it open; waiting for it to let go"); n != 1 {
		t.Errorf("watch said %d times that the store was busy, want once; stderr %q", n, stderr.String())
	}
}
