// Package proctest proves, with real processes, what the library promises
// about several processes on one store and about crashes: writers take
// turns, readers get in within a bounded wait, an idle writer keeps no one
// out, a store that stays busy past a writer's shutdown loses nothing (the
// spool), and a writer killed at any point loses nothing it acknowledged.
package proctest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// bins builds the writer and the records command once per test binary.
func bins(t *testing.T) (writer, records string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "otelrecords-proctest-")
		if buildErr != nil {
			return
		}
		// Each is built in its own directory: the records command is a
		// module of its own, which a build from here reaches only through
		// the workspace (go.work), and not at all with GOWORK=off.
		for dir, name := range map[string]string{"../recwriter": "recwriter", "../../../cmd/records": "records"} {
			build := exec.Command("go", "build", "-o", filepath.Join(binDir, name), ".")
			build.Dir = dir
			out, err := build.CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", dir, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "recwriter"), filepath.Join(binDir, "records")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if faultDir != "" {
		os.RemoveAll(faultDir)
	}
	os.Exit(code)
}

// proc is a running writer whose stdout lines are collected.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	acked  int
	done   chan struct{}
	stderr strings.Builder
}

func startWriter(t *testing.T, dir, label string, args ...string) *proc {
	t.Helper()
	writer, _ := bins(t)
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(writer, append([]string{"-dir", dir, "-label", label}, args...)...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			if n, ok := strings.CutPrefix(line, "acked "); ok {
				p.acked, _ = strconv.Atoi(n)
			}
			p.mu.Unlock()
		}
		p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("writer still running after %v; output %q; stderr %s", d, p.output(), p.stderr.String())
	}
}

func (p *proc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func (p *proc) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked
}

// waitFor polls until cond holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readWork reads the "work" records of the store, by session label, as the
// list of their "i" attributes in stamp order: every session's, or only
// those of the sessions labelled only, if given. It opens the store as a
// reader would, waiting for writers.
func readWork(t *testing.T, dir string, only ...string) map[string][]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := badgerstore.OpenWait(ctx, dir, nil, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatalf("open %s for reading: %v", dir, err)
	}
	defer st.Close()
	r := sessions.NewRecords(st)
	labels := map[sessions.SessionID]string{}
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		labels[s.ID] = s.Label
	}
	var opts []sessions.ReadOption
	for id, l := range labels {
		if len(only) > 0 && l == only[0] {
			opts = append(opts, sessions.InSession(id))
		}
	}
	out := map[string][]int64{}
	if len(only) > 0 && len(opts) == 0 {
		return out
	}
	for rec, err := range r.All("work", opts...) {
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rec.Record.Attributes.Get("label")
		if l, ok := labels[rec.Stamp.Session]; ok && l != v.AsString() {
			t.Fatalf("record of %q under session %q", v.AsString(), l)
		}
		i, _ := rec.Record.Attributes.Get("i")
		out[v.AsString()] = append(out[v.AsString()], i.AsInt64())
	}
	if r.Skipped() > 0 {
		t.Fatalf("%d values did not decode", r.Skipped())
	}
	return out
}

// exactlyOnce checks that got holds 0..n-1, each once, in order.
func exactlyOnce(t *testing.T, what string, got []int64, n int) {
	t.Helper()
	if len(got) < n {
		t.Fatalf("%s: %d records, want at least the %d acknowledged", what, len(got), n)
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("%s: record %d is i=%d: lost, repeated or out of order", what, i, v)
		}
	}
}

func TestWritersAndReadersShareAStore(t *testing.T) {
	_, records := bins(t)
	dir := filepath.Join(t.TempDir(), "store")
	const n = 3000
	a := startWriter(t, dir, "a", "-n", fmt.Sprint(n), "-batch", "100", "-pause", "10ms", "-idle", "1s")
	b := startWriter(t, dir, "b", "-n", fmt.Sprint(n), "-batch", "100", "-pause", "10ms", "-idle", "1s")

	// While the writers are alive, the CLI and the Go reader must always
	// get in, within a bounded wait.
	waitFor(t, 20*time.Second, "a first acknowledgement", func() bool { return a.ackedCount() > 0 || b.ackedCount() > 0 })
	reads, waits := 0, 0
	alive := func() bool {
		select {
		case <-a.done:
			select {
			case <-b.done:
				return false
			default:
			}
		default:
		}
		return true
	}
	for alive() {
		start := time.Now()
		cmd := exec.Command(records, "sessions", "--dir", dir, "--json", "--wait", "10s")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("records sessions while writers run: %v\nstdout %s\nstderr %s", err, out, stderr.String())
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("a read took %v", took)
		}
		if strings.Contains(stderr.String(), "waiting for the store") {
			waits++
		}
		reads++
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := badgerstore.OpenWait(ctx, dir, nil, badgerstore.WithReadOnly())
		cancel()
		if err != nil {
			t.Fatalf("Go reader while writers run: %v", err)
		}
		st.Close()
		reads++
		time.Sleep(50 * time.Millisecond)
	}
	a.wait(t, 60*time.Second)
	b.wait(t, 60*time.Second)
	t.Logf("%d reads while the writers ran, %d of the CLI's waited for the store", reads, waits)
	work := readWork(t, dir)
	exactlyOnce(t, "writer a", work["a"], n)
	exactlyOnce(t, "writer b", work["b"], n)
	// The CLI's counts (from the keys alone) are the records read.
	out, err := exec.Command(records, "sessions", "--dir", dir, "--json").Output()
	if err != nil {
		t.Fatalf("records sessions after the writers: %v", err)
	}
	counted := 0
	for line := range strings.Lines(string(out)) {
		var row struct {
			Label   string         `json:"label"`
			Records map[string]int `json:"records"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("records sessions --json line %q: %v", line, err)
		}
		if got, want := row.Records["work"], len(work[row.Label]); got != want {
			t.Errorf("records sessions counts %d work records for %q, the reader read %d", got, row.Label, want)
		}
		if row.Records["work"] > 0 {
			counted++
		}
	}
	if counted != 2 {
		t.Errorf("records sessions counted work in %d sessions, want both writers':\n%s", counted, out)
	}
	// Once writers and readers are gone, no one's marker is left behind.
	if _, err := os.Lstat(filepath.Join(dir, "otelrecords.waiting")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a waiting marker was left behind: %v", err)
	}
	// Taking turns is normal operation: nothing is reported, nothing is
	// counted as a write error; the waits are counted as waits.
	for _, p := range []*proc{a, b} {
		out := p.output()
		last := out[len(out)-1]
		if !strings.HasPrefix(last, "done written=3000 spooled=0 dropped=0 err=<nil> writeerrors=0 ") {
			t.Errorf("writer ended with %q; stderr %s", last, p.stderr.String())
		}
		if strings.Contains(p.stderr.String(), "otel:") {
			t.Errorf("a writer reported while taking turns: %s", p.stderr.String())
		}
		t.Logf("writer: %s", last)
	}
}

func TestIdleWriterKeepsNoOneOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	w := startWriter(t, dir, "idle", "-n", "10", "-batch", "10", "-idle", "30s")
	waitFor(t, 20*time.Second, "the acknowledgement", func() bool { return w.ackedCount() == 10 })
	// After its idle release, a plain open — no waiting — gets in, for
	// reading and for writing, while the writer process lives on.
	var err error
	var st *badgerstore.Store
	waitFor(t, 3*time.Second, "the idle writer to let the store go", func() bool {
		st, err = badgerstore.Open(dir, badgerstore.WithReadOnly())
		return err == nil
	})
	st.Close()
	rw, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatalf("read-write open beside an idle writer: %v", err)
	}
	rw.Close()
	if got := readWork(t, dir)["idle"]; len(got) != 10 {
		t.Fatalf("idle writer's records = %v", got)
	}
	select {
	case <-w.done:
		t.Fatal("writer exited early")
	default:
	}
}

func TestSpoolWhenStoreStaysBusy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	// Another process's handle: the test holds the store read-write and
	// never lets it go while the writer runs.
	holder, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := startWriter(t, dir, "spooled", "-n", "200", "-batch", "50", "-flush-timeout", "100ms", "-shutdown-timeout", "500ms")
	w.wait(t, 30*time.Second)
	out := w.output()
	if last := out[len(out)-1]; !strings.HasPrefix(last, "done written=0 spooled=200 dropped=0 err=<nil>") {
		t.Fatalf("writer ended with %q, want its 200 records spooled; stderr %s", last, w.stderr.String())
	}
	if !spool.Has(dir) {
		t.Fatal("no spool file")
	}
	// What was spooled is said, once; the waiting before it is not.
	if n := strings.Count(w.stderr.String(), "otel:"); n != 1 || !strings.Contains(w.stderr.String(), "spool") {
		t.Errorf("writer reported %d times, want once, about the spool: %s", n, w.stderr.String())
	}
	holder.Close()
	// The next opener, a reader here, merges the spool.
	exactlyOnce(t, "spooled writer", readWork(t, dir)["spooled"], 200)
	if spool.Has(dir) {
		t.Fatal("the spool is still there after a merge")
	}
}

func TestKilledWriterLosesNothingAcknowledged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	const kills = 20
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range kills {
		label := fmt.Sprintf("run%02d", k)
		w := startWriter(t, dir, label, "-n", "100000", "-batch", fmt.Sprint(20+rng.IntN(200)))
		waitFor(t, 20*time.Second, "a first acknowledgement", func() bool { return w.ackedCount() > 0 })
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		w.cmd.Process.Signal(syscall.SIGKILL)
		<-w.done
		acked := w.ackedCount()
		// A reader right after the crash, with no writer opening the store
		// first: it recovers the store itself.
		got := readWork(t, dir, label)[label]
		exactlyOnce(t, label, got, acked)
		t.Logf("kill %d: %d acknowledged, %d present", k+1, acked, len(got))
	}
	// Every run's session is still there.
	if n := sessionCount(t, dir); n != kills {
		t.Fatalf("%d sessions in the store, want %d", n, kills)
	}
}
