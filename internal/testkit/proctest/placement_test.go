package proctest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
)

// placementRunsEnv sets how many times TestShortLivedWritersLeaveOneStore
// starts its eight writers on a new directory (default placementRuns).
const placementRunsEnv = "OTELRECORDS_TEST_PLACEMENT_RUNS"

// placementRuns is the default: 0.15 to 0.2 s a run on 2 cores (63 s
// for 300 beside a load of 16), so a minute or so in CI. RELIABILITY.md's
// command runs 200.
const placementRuns = 300

// Eight short-lived writer processes started at once on one new
// directory, as a build's parallel jobs are, leave one store, in that
// directory, holding every record each of them acknowledged: each writes
// 5 records and acknowledges them with a 1 ms deadline, so that whoever
// finds the store busy spools, and shuts down. Before the one rule, loops
// of such runs put a second store in the directory's otelrecords/ child,
// or a spool where no opener merged it, 1 to 7 times in 200: records
// acknowledged that no reader found.
func TestShortLivedWritersLeaveOneStore(t *testing.T) {
	runs := placementRuns
	if s := os.Getenv(placementRunsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", placementRunsEnv, s)
		}
		runs = n
	}
	const writers, n = 8, 5
	base := t.TempDir()
	bins(t) // built before the clock starts
	began := time.Now()
	spooled := 0
	for r := range runs {
		dir := filepath.Join(base, fmt.Sprintf("run%03d", r), "store")
		ps := make([]*proc, writers)
		for i := range ps {
			ps[i] = startWriter(t, dir, fmt.Sprintf("w%d", i), "-n", strconv.Itoa(n), "-batch", strconv.Itoa(n),
				"-flush-timeout", "1ms", "-shutdown-timeout", "2s")
		}
		acked := make([]int, writers)
		for i, p := range ps {
			p.wait(t, 60*time.Second)
			acked[i] = p.ackedCount()
			out := p.output()
			last := ""
			if len(out) > 0 {
				last = out[len(out)-1]
			}
			if !strings.HasPrefix(last, "done ") || !strings.Contains(last, " dropped=0 ") {
				t.Fatalf("run %d: writer %d ended with %q; stderr %s", r, i, last, p.stderr.String())
			}
			if strings.Contains(last, " err=<nil> ") {
				acked[i] = n // Shutdown wrote or spooled every record
			}
			if !strings.Contains(last, " spooled=0 ") {
				spooled++
			}
		}
		oneStore(t, r, dir)
		work := readWork(t, dir)
		for i, p := range ps {
			l := fmt.Sprintf("w%d", i)
			if len(work[l]) < acked[i] {
				t.Logf("run %d: writer %s said %q; stderr %s", r, l, p.output(), p.stderr.String())
			}
			exactlyOnce(t, fmt.Sprintf("run %d: writer %s", r, l), work[l], acked[i])
		}
	}
	t.Logf("%d runs of %d writers in %v: one store each, every acknowledged record in it; %d writers spooled", runs, writers, time.Since(began).Round(time.Millisecond), spooled)
}

// oneStore fails the test unless dir holds one store, its own, and
// nothing but a store's files: no second store below it (an
// otelrecords/ child), nothing a writer would have been refused for.
func oneStore(t *testing.T, run int, dir string) {
	t.Helper()
	if got, err := badgerstore.Place(dir); err != nil || got != dir {
		t.Fatalf("run %d: Place(%s) = %s, %v; want the directory itself", run, dir, got, err)
	}
	var manifests []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "MANIFEST" {
			manifests = append(manifests, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != 1 || manifests[0] != filepath.Join(dir, "MANIFEST") {
		t.Fatalf("run %d: stores in %s: %v; want its own alone", run, dir, manifests)
	}
}
