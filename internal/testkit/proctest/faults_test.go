package proctest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

var (
	faultOnce sync.Once
	faultDir  string // removed by TestMain
	faultBin  string
	faultErr  error
)

// faultWriter builds internal/testkit/faultwriter once per test binary.
func faultWriter(t *testing.T) string {
	t.Helper()
	faultOnce.Do(func() {
		dir, err := os.MkdirTemp("", "otelrecords-faultwriter-")
		if err != nil {
			faultErr = err
			return
		}
		faultDir, faultBin = dir, filepath.Join(dir, "faultwriter")
		build := exec.Command("go", "build", "-o", faultBin, ".")
		build.Dir = "../faultwriter"
		if out, err := build.CombinedOutput(); err != nil {
			faultErr = fmt.Errorf("go build faultwriter: %v\n%s", err, out)
		}
	})
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	return faultBin
}

// faultStats is a "stats" or "done" line of faultwriter.
type faultStats struct {
	Made int64
	exporter.Stats
}

// faultRun is a running faultwriter whose stats lines, stderr and peak
// anonymous memory are collected.
type faultRun struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	last    faultStats
	lines   int // stats lines read so far: a later line was sampled later
	done    *faultStats
	stderr  []string
	peak    atomic.Int64 // bytes: the largest RssAnon seen
	exited  chan struct{}
	sampled chan struct{}
}

// startFault starts faultwriter with args and samples its RssAnon from
// /proc every 20 ms: the memory the process itself allocated, without
// the store's files Badger maps (which VmRSS counts).
func startFault(t *testing.T, args ...string) *faultRun {
	t.Helper()
	r := &faultRun{cmd: exec.Command(faultWriter(t), args...), exited: make(chan struct{}), sampled: make(chan struct{})}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines sync.WaitGroup
	lines.Go(func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			what, js, _ := strings.Cut(sc.Text(), " ")
			var s faultStats
			if json.Unmarshal([]byte(js), &s) != nil {
				continue
			}
			r.mu.Lock()
			r.last = s
			r.lines++
			if what == "done" {
				r.done = &s
			}
			r.mu.Unlock()
		}
	})
	lines.Go(func() {
		sc := bufio.NewScanner(errs)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.stderr = append(r.stderr, sc.Text())
			r.mu.Unlock()
		}
	})
	status := fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid)
	go func() {
		defer close(r.sampled)
		for {
			select {
			case <-r.exited:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if kib := rssAnon(status); kib<<10 > r.peak.Load() {
				r.peak.Store(kib << 10)
			}
		}
	}()
	go func() {
		lines.Wait()
		r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.exited
	})
	return r
}

// rssAnon reads RssAnon, in KiB, from a /proc status file; 0 once the
// process is gone.
func rssAnon(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// wait waits for the writer to exit and returns its done line.
func (r *faultRun) wait(t *testing.T, d time.Duration) faultStats {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(d):
		t.Fatalf("faultwriter still running after %v; stderr %q", d, r.errors())
	}
	<-r.sampled
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		t.Fatalf("faultwriter ended without its done line (%v); stderr %q", r.cmd.ProcessState, r.stderr)
	}
	return *r.done
}

func (r *faultRun) stats() faultStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// after waits for a stats line read after this call that satisfies ok,
// and returns it: the writer samples its stats every 200 ms, so the last
// line read may be that old.
func (r *faultRun) after(t *testing.T, d time.Duration, ok func(faultStats) bool) faultStats {
	t.Helper()
	r.mu.Lock()
	seen := r.lines
	r.mu.Unlock()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		s, fresh := r.last, r.lines > seen
		r.mu.Unlock()
		if fresh && ok(s) {
			return s
		}
		select {
		case <-r.exited:
			t.Fatalf("faultwriter exited before a stats line came that the test waits for; stderr %q", r.errors())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no stats line within %v that the test waits for; last %+v", d, r.stats())
	return faultStats{}
}

func (r *faultRun) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stderr)
}

// count counts the stderr lines holding s.
func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// fullDiskBound is the peak anonymous memory a writer on a full disk
// stays under: the exporter's queue (65,536 spans by default, which fills
// when spans end faster than the exporter maps them, full disk or not),
// the records waiting for a write (recorder.SpillBytes, twice over while
// a spill is encoded), Badger's own tables, and the garbage collector's
// headroom. Before issue 22.1 was fixed, it grew by about 35 MiB a second
// on a full disk and did not stop.
const fullDiskBound = 512 << 20

// TestWriterOnAFullDiskStaysBounded runs a writer ending changed spans
// with 1 KiB attributes, as fast as it can up to 20,000 a second, on a
// tmpfs left with 60 MiB free, for OTELRECORDS_TEST_FULLDISK_SECONDS
// (default 12; RELIABILITY.md's command runs 60): the store
// fills to its threshold and refuses, the spool takes what the disk still
// has room for, and then records are dropped, oldest first. At two
// thirds of the run the space comes back (the filler removed, the tmpfs
// grown to 2 GiB). The writer's peak anonymous memory stays under
// fullDiskBound throughout; it reports the drops once; every span is
// accounted for (written, spooled or counted as dropped); the spans it
// ends once the space is back are written; and a new session after it is
// kept.
func TestWriterOnAFullDiskStaysBounded(t *testing.T) {
	seconds := 12
	if s := os.Getenv("OTELRECORDS_TEST_FULLDISK_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 3 {
			t.Fatalf("OTELRECORDS_TEST_FULLDISK_SECONDS=%q: want a number of seconds, at least 3", s)
		}
		seconds = n
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "256m")
	dir := filepath.Join(mnt, "store")
	filler := testsupport.Fill(t, mnt, 60<<20)
	run := time.Duration(seconds) * time.Second
	w := startFault(t, "-dir", dir, "-label", "full", "-duration", run.String(), "-rate", "20000", "-attr", "1024")
	time.Sleep(run * 2 / 3)
	atFree := w.stats()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// And more: what the writer ends in the rest of the run (up to 20 s
	// of it, at a few MB a second) must not fill the disk again.
	testsupport.Remount(t, mnt, "size=2g")
	// The space is back for the writer once it writes after the remount:
	// a line sampled after the remount, then one with more written. Spans
	// ended before that may still be shed with the streak that was failing
	// (oldest first, as documented), so "after" counts from there.
	remounted := w.after(t, time.Minute, func(faultStats) bool { return true })
	back := w.after(t, time.Minute, func(s faultStats) bool { return s.Written > remounted.Written })
	done := w.wait(t, run+2*time.Minute)
	errs := w.errors()
	peak := w.peak.Load()
	t.Logf("%d s: peak RssAnon %d MiB; made %d, written %d, spooled %d (%d as the store failed), dropped as unwritable %d, write errors %d; at the free: made %d, written %d",
		seconds, peak>>20, done.Made, done.Written, done.Spooled, done.SpooledUnwritable, done.Unwritable, done.WriteErrors, atFree.Made, atFree.Written)
	for _, e := range errs {
		t.Logf("stderr: %.400s", e)
	}
	if peak > fullDiskBound {
		t.Errorf("peak RssAnon %d MiB, want under %d MiB", peak>>20, fullDiskBound>>20)
	}
	if atFree.Unwritable == 0 || atFree.SpooledUnwritable == 0 {
		t.Errorf("at the free: %+v; want records spooled, then dropped, as the disk filled", atFree)
	}
	if n := count(errs, "dropped the"); n != 1 {
		t.Errorf("the drops were reported %d times, want once", n)
	}
	if got := done.Written + done.Spooled + done.Unwritable; got != done.Made || done.Dropped != 0 || done.Pending != 0 {
		t.Errorf("done %+v: written+spooled+unwritable = %d, want all %d spans made, none left", done, got, done.Made)
	}
	if done.Written <= atFree.Written {
		t.Errorf("written %d at the end, %d when the space came back: want writes to resume", done.Written, atFree.Written)
	}
	// What was ended after the space came back is in the store (what the
	// spool took is merged into it by the opener that found room).
	got := readWork(t, dir)["full"]
	after := 0
	for _, i := range got {
		if i >= back.Made {
			after++
		}
	}
	if want := done.Made - back.Made; int64(after) != want {
		t.Errorf("%d records of the %d spans ended after the writer wrote again are in the store", after, want)
	}
	// And a new session is kept.
	next := startFault(t, "-dir", dir, "-label", "next", "-n", "100")
	if d := next.wait(t, time.Minute); d.Written != 100 || len(next.errors()) != 0 {
		t.Errorf("the next writer: %+v, stderr %q; want its 100 records written, nothing reported", d, next.errors())
	}
	if n := len(readWork(t, dir, "next")["next"]); n != 100 {
		t.Errorf("the next session has %d records in the store, want 100", n)
	}
}

// hugeValue is the size of the value TestHugeAttributeValuesStayBounded's
// spans carry, and hugeBound what the writer's anonymous memory stays
// under: the one copy of the value the host itself holds (a string shared
// by its spans), and 32 MiB for everything else. Before issue 22.2 was
// fixed, each span's value was encoded in full to be refused as too
// large: 1,730 MiB.
const (
	hugeValue = 100_000_000
	hugeBound = hugeValue + 32<<20
)

// TestHugeAttributeValuesStayBounded ends 200 spans, each with a 100 MB
// attribute value, in a writer process: each is dropped as too large
// (a store holds at most 15 MiB a record) without being copied, and the
// writer's peak anonymous memory stays under hugeBound.
func TestHugeAttributeValuesStayBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the writer's memory is read from /proc")
	}
	dir := filepath.Join(t.TempDir(), "store")
	w := startFault(t, "-dir", dir, "-n", "201", "-huge", strconv.Itoa(hugeValue), "-rate", "1000")
	done := w.wait(t, 2*time.Minute)
	peak := w.peak.Load()
	t.Logf("peak RssAnon %d MiB (the value: %d MiB); %+v", peak>>20, hugeValue>>20, done)
	if peak > hugeBound {
		t.Errorf("peak RssAnon %d MiB, want under %d MiB", peak>>20, hugeBound>>20)
	}
	if done.TooLarge != 200 || done.Written != 1 {
		t.Errorf("done %+v; want the 200 huge spans too large, the first written", done)
	}
	if n := count(w.errors(), "too large"); n != 1 {
		t.Errorf("stderr %q: want the records too large reported once", w.errors())
	}
}

// TestTwoWritersWithAKeepCount starts two writers with a keep count at
// once on a new store, three times: each waits its turn for the prune
// that keeping its session runs, as for any write, so neither counts a
// write error; neither reports anything but, when the other held the
// store at its Shutdown, the records it spooled and the wait it made;
// both sessions are kept whole. Before (issue 22.4), every run printed
// "prune before keeping the session: store locked" with WriteErrors 1.
func TestTwoWritersWithAKeepCount(t *testing.T) {
	for run := range 3 {
		dir := filepath.Join(t.TempDir(), "store")
		a := startFault(t, "-dir", dir, "-label", "a", "-keep", "5", "-n", "3000", "-rate", "3000")
		b := startFault(t, "-dir", dir, "-label", "b", "-keep", "5", "-n", "3000", "-rate", "3000")
		for _, w := range []*faultRun{a, b} {
			done := w.wait(t, time.Minute)
			// One report may come, and only if true: records spooled
			// because the other writer held the store at Shutdown (which
			// does not wait), saying how long the write waited.
			errs := w.errors()
			spooled := count(errs, "another process held the store") == 1 && count(errs, "a write waited") == 1 && done.Spooled > 0
			if done.WriteErrors != 0 || (len(errs) != 0 && (len(errs) != 1 || !spooled)) {
				t.Errorf("run %d: a writer ended with %+v, stderr %q; want no write error and nothing reported but records it spooled", run, done, errs)
			}
			for _, e := range errs {
				t.Logf("run %d: %.300s", run, e)
			}
		}
		work := readWork(t, dir)
		for _, l := range []string{"a", "b"} {
			if n := len(work[l]); n != 3000 {
				t.Errorf("run %d: session %s has %d records, want 3000", run, l, n)
			}
		}
	}
}
