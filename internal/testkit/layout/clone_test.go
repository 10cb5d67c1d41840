package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCleanCloneStaysClean clones this repository's last commit and does
// in the clone what a new user does first — reads a package's
// documentation (go doc loads the workspace's whole module graph), lists
// the modules, loads every package of the three modules with its tests
// (as go test and go vet do), builds the Collector distribution — and
// checks the clone is as it was cloned: go.work.sum holds every checksum
// the workspace needs, so no command rewrites it (issues 33 and 43: go
// doc ./explain added lines to it on a fresh machine). The go command
// fetches what the module cache lacks from the module proxy, as on a
// fresh machine, and writes a checksum the workspace lacks into
// go.work.sum, where the test sees it; it skips when the proxy cannot be
// reached.
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
	// The clone's own go.work, whatever workspace the test runs in.
	env := append(os.Environ(), "GOWORK=")
	run := func(name string, args ...string) string {
		t.Helper()
		return runFetching(t, clone, env, name, args...)
	}
	if out, err := exec.Command(git, "clone", "--quiet", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	run("go", "doc", "./explain")
	run("go", "list", "-m", "all")
	run("go", "list", "-deps", "-test", "./...", "./cmd/records/...", "./collector/...")
	run("go", "build", "-o", os.DevNull, "./collector/cmd/otelcol-records")
	if status := run(git, "status", "--porcelain"); status != "" {
		diff := run(git, "diff", "--stat")
		t.Errorf("the clone changed:\n%s%s", status, diff)
	}
}
