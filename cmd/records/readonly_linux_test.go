package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestReadOnlyStoreShowsTheSpool reads a store from read-only media (a
// mounted artifact) whose spool holds a session a writer set aside: the
// commands read it, show the spooled session, write nothing, and say what
// they left for a writer. Before, they could not read such a store at all
// ("read-only file system": the reader opened it read-write to merge).
func TestReadOnlyStoreShowsTheSpool(t *testing.T) {
	src := writeStore(t)
	sessionsBefore := mustRun(t, "--dir", src, "sessions", "--json")
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "160m")
	dir := filepath.Join(mnt, "store")
	if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	// A session row, set aside by a writer whose store stayed busy.
	row := testsupport.SessionEntry(t, sessions.Session{ID: 1_900_000_000_000_000_000, Label: "spooled session"})
	if err := spool.Write(dir, []sessions.Entry{row}); err != nil {
		t.Fatal(err)
	}
	testsupport.RemountReadOnly(t, mnt)

	code, out, errOut := runCLI(t, "--dir", dir, "sessions", "--json")
	if code != exitOK {
		t.Fatalf("records sessions on read-only media: exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, sessionsBefore) || !strings.Contains(out, "spooled session") {
		t.Errorf("records sessions on read-only media:\n%s\nwant what the store holds:\n%s\nand the spooled session", out, sessionsBefore)
	}
	if want := "records: 1 record in the spool left for a writer to merge\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// TestReadOnlyStoreRefusesChanges runs the commands that change a store
// (prune, compact) on read-only media: each says that the store cannot be
// written, and that nothing was changed, rather than Badger's words about
// a pid file.
func TestReadOnlyStoreRefusesChanges(t *testing.T) {
	src := writeStore(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "160m")
	dir := filepath.Join(mnt, "store")
	if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	testsupport.RemountReadOnly(t, mnt)
	for _, args := range [][]string{{"prune", "--keep", "1"}, {"compact"}} {
		code, out, errOut := runCLI(t, append([]string{"--dir", dir}, args...)...)
		want := "records: the store at " + dir + " cannot be written (read-only media, or no permission to write it): nothing was changed\n"
		if code != exitError || out != "" || errOut != want {
			t.Errorf("records %s on read-only media: exit %d, stdout %q, stderr %q; want exit 1 and %q", args[0], code, out, errOut, want)
		}
	}
}
