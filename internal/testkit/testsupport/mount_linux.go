//go:build linux

package testsupport

import (
	"bytes"
	"os/exec"
	"testing"
)

// RemountReadOnly makes the file system mounted at dir read-only: what a
// mounted artifact or a snapshot is, and what stops even root from
// writing (permission bits do not). Unlike Remount, it skips the test
// where remounting is not allowed.
func RemountReadOnly(t testing.TB, dir string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot remount %s read-only: %v: %s", dir, err, bytes.TrimSpace(out))
	}
}
