package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCleanCloneStaysClean clones this repository's last commit and does
// in the clone what a new user does first — reads a package's
// documentation, loads every package of the three modules with its tests
// (as go test and go vet do), builds the Collector distribution — and
// checks the clone is as it was cloned: go.work.sum holds every checksum
// the workspace needs, so no command rewrites it (issue 33: go doc
// ./explain added 92 lines to it). It runs offline: a checksum the
// workspace lacks fails it rather than being fetched.
func TestCleanCloneStaysClean(t *testing.T) {
	if testing.Short() {
		t.Skip("clones the repository and loads its three modules")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	clone := filepath.Join(t.TempDir(), "clone")
	env := append(os.Environ(), "GOPROXY=off", "GOWORK=")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = clone, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out, err := exec.Command(git, "clone", "--quiet", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	run("go", "doc", "./explain")
	run("go", "list", "-deps", "-test", "./...", "./cmd/records/...", "./collector/...")
	run("go", "build", "-o", os.DevNull, "./collector/cmd/otelcol-records")
	if status := run(git, "status", "--porcelain"); status != "" {
		diff := run(git, "diff", "--stat")
		t.Errorf("the clone changed:\n%s%s", status, diff)
	}
}
