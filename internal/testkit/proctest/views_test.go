package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/bigstore"
)

// bigTestsEnv, set to 1, runs the tests on stores of 256 MiB, which take
// about two minutes on two shared cores: .ci/run sets it.
const bigTestsEnv = "OTELRECORDS_BIG_TESTS"

// viewsRSSBound is the peak anonymous memory a records command may take
// on any store, whatever its size: what BENCHMARKS.md states.
const viewsRSSBound = 128 << 20

// buildBigStore builds, with bench/cmd/bigstore (built without the race
// detector, so a store of 256 MiB takes seconds), a store of mb MiB of
// payload in the directory of the test binaries, which TestMain removes.
func buildBigStore(t *testing.T, name string, args ...string) string {
	t.Helper()
	bins(t)
	tool := filepath.Join(binDir, "bigstore")
	if _, err := exec.LookPath(tool); err != nil {
		build := exec.Command("go", "build", "-o", tool, ".")
		build.Dir = "../../../bench/cmd/bigstore"
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build bigstore: %v\n%s", err, out)
		}
	}
	dir := filepath.Join(binDir, name)
	began := time.Now()
	if out, err := exec.Command(tool, append([]string{"-dir", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("bigstore %v: %v\n%s", args, err, out)
	}
	t.Logf("built store %s (%v) in %v", name, args, time.Since(began).Round(time.Millisecond))
	return dir
}

// TestViewsStayBounded runs every view of the records command on stores
// of 256 MiB, one of records of 1 KiB with one in 200 of 2 MiB and one of
// 4 MiB values, as a process of its own, and checks its peak anonymous
// memory (RssAnon, sampled from /proc: Badger maps the store's files,
// which the kernel reclaims) stays within viewsRSSBound (issue 22: report
// took 526 MiB for a 58 MiB store, export --format otlp-json 5.2 GB for a
// 251 MB one).
func TestViewsStayBounded(t *testing.T) {
	if testing.Short() || os.Getenv(bigTestsEnv) != "1" {
		t.Skip("builds two stores of 256 MiB, about two minutes: set " + bigTestsEnv + "=1")
	}
	stores := map[string]string{
		"mixed": buildBigStore(t, "mixed", "-mb", "256"),
		"huge":  buildBigStore(t, "huge", "-mb", "256", "-sessions", "2", "-value", fmt.Sprint(4<<20), "-huge-every", "0"),
	}
	_, records := bins(t)
	views := [][]string{
		{"dump"}, {"dump", "--json"}, {"show", "work"},
		{"export", "--format", "chrome"}, {"export", "--format", "otlp-json"},
		{"report"}, {"timeline"}, {"summary"}, {"cost"}, {"diff", "--against", "."},
	}
	for _, name := range []string{"mixed", "huge"} {
		dir := stores[name]
		for _, v := range views {
			args := append([]string{"--dir", dir}, v...)
			if v[0] == "diff" {
				args[len(args)-1] = dir
			}
			cmd := exec.Command(records, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			began := time.Now()
			peak, err := bigstore.RunPeakAnon(cmd)
			if err != nil {
				t.Errorf("%s: records %s: %v\n%s", name, strings.Join(v, " "), err, stderr.String())
				continue
			}
			t.Logf("%s: records %-26s peak anonymous %5.1f MiB, %v", name, strings.Join(v, " "), float64(peak)/(1<<20), time.Since(began).Round(time.Millisecond))
			if peak > viewsRSSBound {
				t.Errorf("%s: records %s took %.1f MiB of anonymous memory, want at most %d MiB", name, strings.Join(v, " "), float64(peak)/(1<<20), viewsRSSBound>>20)
			}
		}
	}
}
