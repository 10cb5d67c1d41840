package badgerstore

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// flushStallEnv names the store directory of TestWritesGoOnBehindAStalledFlush's
// child process.
const flushStallEnv = "OTELRECORDS_FLUSH_STALL_CHILD"

// flushStall is how long the child's every msync takes: a disk that stalls
// Badger's memtable flushes (CreateTable msyncs each new table) far longer
// than the exporter waits for progress on a full queue.
const flushStall = 3 * time.Second

// flushStallBytes is what the child writes: five memtables' worth, more
// than two memtables buffer behind a stalled flush, less than five.
const flushStallBytes = 5 * memTableSize

// While a disk stalls a memtable flush, Badger's writes go on into the
// memtables waiting to flush (numMemtables), and block only once they are
// all full: the exporter's span calls, waiting for room in a full queue,
// then see no progress. This was figure 4's "8 goroutines, 0 dropped"
// missing now and then (BENCHMARKS.md): the goroutine dump at a give-up
// showed Badger's write goroutine in ensureRoomForWrite and its flusher in
// msync. The child, run under strace with every msync delayed by
// flushStall, writes flushStallBytes into a new store; the writes must not
// wait for the stalled flush. With 2 memtables (1 writing, 2 queued, 1
// flushing hold 4 MiB) they waited the whole flushStall; with 5 they do
// not.
func TestWritesGoOnBehindAStalledFlush(t *testing.T) {
	if dir := os.Getenv(flushStallEnv); dir != "" {
		stalledFlushChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("a child process under strace")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (.ci/run installs it): it delays the child's msync calls")
	}
	dir := filepath.Join(t.TempDir(), "store")
	cmd := exec.Command(strace, "-f", "--seccomp-bpf", "-qq", "-o", "/dev/null",
		"-e", "trace=msync", "-e", fmt.Sprintf("inject=msync:delay_enter=%d", flushStall.Microseconds()),
		os.Args[0], "-test.run=^TestWritesGoOnBehindAStalledFlush$")
	cmd.Env = append(os.Environ(), flushStallEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`wrote (\d+) bytes in (\d+) ms, (\d+) tables`).FindSubmatch(out)
	switch {
	case m != nil:
	case regexp.MustCompile(`(?m)^(open|write): `).Match(out):
		t.Fatalf("the child's store failed: %v\n%s", err, out)
	case err != nil:
		// strace could not trace the child (ptrace refused in a
		// container, say).
		t.Skipf("strace could not run the child: %v\n%s", err, out)
	default:
		t.Fatalf("the child did not report its writes:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	ms, _ := strconv.Atoi(string(m[2]))
	took := time.Duration(ms) * time.Millisecond
	t.Logf("with every msync delayed %v: %d bytes written in %v, %s tables flushed by then", flushStall, n, took, m[3])
	if n < flushStallBytes {
		t.Fatalf("the child wrote %d bytes, want at least %d", n, flushStallBytes)
	}
	if took >= flushStall/2 {
		t.Errorf("%d bytes took %v behind a flush stalled for %v: the writes waited for it, want them buffered in the memtables waiting to flush (numMemtables = %d)", n, took, flushStall, numMemtables)
	}
}

// stalledFlushChild writes flushStallBytes into a new store at dir in
// writes of 256 KiB, prints how long they took, and exits without closing
// the store: Close would wait for every stalled flush.
func stalledFlushChild(dir string) {
	s, err := Open(dir)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	const value = 1 << 10
	entries := make([]sessions.Entry, (256<<10)/value)
	written, key := 0, 0
	start := time.Now()
	for written < flushStallBytes {
		for i := range entries {
			entries[i] = sessions.Entry{Key: fmt.Appendf(nil, "k%08d", key), Value: make([]byte, value)}
			key++
			written += value
		}
		if err := s.Write(entries); err != nil {
			fmt.Println("write:", err)
			os.Exit(1)
		}
	}
	took := time.Since(start)
	fmt.Printf("wrote %d bytes in %d ms, %d tables\n", written, took.Milliseconds(), len(s.db.Tables()))
	os.Exit(0)
}
