package badgerstore

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// startReader starts a reader process on the store at dir, and returns
// once it has opened the store, with what kills it (SIGKILL: it cannot
// close the store).
func startReader(t *testing.T, dir string) (kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=reader", "BADGERSTORE_TEST_DIR="+dir)
	hold, release := io.Pipe() // its stdin, open until the test ends
	ready, said := io.Pipe()
	cmd.Stdin, cmd.Stdout = hold, said
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		said.Close()
		close(done)
	}()
	kill = func() {
		release.Close()
		cmd.Process.Kill()
		<-done
	}
	t.Cleanup(kill)
	if line, err := bufio.NewReader(ready).ReadString('\n'); line != "ready\n" {
		t.Fatalf("reader: %q, %v", line, err)
	}
	return kill
}

// replayDirs returns the replay directories in the temporary directory,
// each made a minute old, past the grace a reader gives a new one.
func replayDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), replayPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	for _, d := range dirs {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

// TestKilledReaderLeavesNothing: a reader of a crashed store on read-only
// media replays the writer's log in a temporary directory; killed, it
// cannot remove it, and the next reader does, while the directory of a
// reader still running stays (issue 22: each killed reader left 0.6 MB in
// the temporary directory for ever).
func TestKilledReaderLeavesNothing(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	mnt, dir := storeOnTmpfs(t, true)
	testsupport.RemountReadOnly(t, mnt)

	startReader(t, dir) // alive while the next reader opens
	live := replayDirs(t)
	if len(live) != 1 {
		t.Fatalf("replay directories %v, want the reader's one", live)
	}
	killed := startReader(t, dir)
	all := replayDirs(t)
	if len(all) != 2 {
		t.Fatalf("replay directories %v, want the two readers'", all)
	}
	killed()

	st, err := OpenWait(context.Background(), dir, nil, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), replayPrefix+"*"))
	if !slices.Equal(after, live) {
		t.Errorf("after the next reader: %v, want only the live reader's %v (of %v)", after, live, all)
	}
}
