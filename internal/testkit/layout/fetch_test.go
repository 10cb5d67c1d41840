package layout

import (
	"os/exec"
	"strings"
	"testing"

	_ "github.com/otelrecords/otelrecords/internal/testkit/testsupport" // the user's module it runs keeps its stores' sound cache in the tests', not the user's
)

// runFetching runs name with args in dir and env and returns its output.
// The go command fetches what the module cache lacks through the module
// proxy and checksum database of the user's go env: the tests assume
// nothing about what the cache holds, which on a fresh machine is
// nothing.
// It fails the test if the command fails, unless the command failed for
// want of a module it could not fetch because the module proxy cannot be
// reached (no network, GOPROXY=off): then it skips the test, saying so,
// since what is under test is the repository, not the machine's network.
func runFetching(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err == nil {
		return string(out)
	}
	line := name + " " + strings.Join(args, " ")
	if proxyUnreachable(string(out)) {
		t.Skipf("%s needs modules the module cache lacks, and the module proxy cannot be reached (GOPROXY=%s):\n%s",
			line, strings.TrimSpace(string(goCmd(t, "../../..", "env", "GOPROXY"))), out)
	}
	t.Fatalf("%s: %v\n%s", line, err, out)
	return ""
}

// proxyUnreachable reports whether the go command's output says that it
// could not reach the module proxy or the checksum database, or was told
// not to.
func proxyUnreachable(out string) bool {
	for _, s := range []string{
		"disabled by GOPROXY=off", "dial tcp", "no such host", "connection refused",
		"network is unreachable", "i/o timeout", "TLS handshake timeout", "Client.Timeout exceeded",
	} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}
