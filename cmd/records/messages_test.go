package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessagesNameTheMistake checks that a command line the store cannot
// answer says what was wrong with it, in its own terms.
func TestMessagesNameTheMistake(t *testing.T) {
	dir := writeGoldenStore(t)
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"summary", "--dir", file}, 1, "--dir " + file + " is a file, not a store's directory"},
		{[]string{"summary", "--dir", filepath.Join(file, "store")}, 1, "lies under " + file + ", which is a file"},
		{[]string{"diff", "--dir", dir, "--against", file}, 1, "--against " + file + " is a file"},
		{[]string{"summary", "--dir", dir, "--session", "abc"}, 2, `--session "abc": not a session id`},
		{[]string{"dump", "--dir", dir, "--session", "-1"}, 2, `--session "-1": not a session id`},
		{[]string{"summary", "--dir", dir, "--top", "x"}, 2, `--top "x": not a whole number`},
		{[]string{"summary", "--dir", dir, "--wait", "soon"}, 2, `--wait "soon": not a duration`},
		{[]string{"prune", "--dir", dir, "--keep", "0"}, 2, "--keep 0 would delete every session: say so with --all"},
		{[]string{"prune", "--dir", dir}, 2, "--keep N (or delete them all with --all)"},
		{[]string{"show", "compiles", "--dir", dir}, 1, "the store has no records of kind compiles; its kinds are: autotune, bench, cache, compile, marks"},
		{[]string{"dump", "--kind", "compiles", "--dir", dir}, 1, "the store has no records of kind compiles; its kinds are: autotune, bench, cache, compile, marks"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "strconv") || strings.Contains(errOut, "MANIFEST") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

// TestPruneAll deletes every session only when told to with --all.
func TestPruneAll(t *testing.T) {
	dir := writeGoldenStore(t)
	if out := mustRun(t, "prune", "--dir", dir, "--all"); !strings.HasPrefix(out, "pruned 2 sessions (13 records), and kept 0:") {
		t.Errorf("prune --all printed %q", out)
	}
	if out := mustRun(t, "prune", "--dir", dir, "--all"); out != "nothing to prune: the store holds no sessions\n" {
		t.Errorf("prune --all of an empty store printed %q", out)
	}
}
