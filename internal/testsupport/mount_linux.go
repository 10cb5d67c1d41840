//go:build linux

// Package testsupport holds helpers only tests import: file systems a test
// can fill up or make read-only, as a host's can be.
package testsupport

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// MountTmpfs mounts a tmpfs of the given size (as mount takes it: "160m")
// at dir, creating dir, until the test's cleanup, or skips the test where
// mounting is not allowed (it needs root, or CAP_SYS_ADMIN).
func MountTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (this test needs root, or CAP_SYS_ADMIN): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// RemountReadOnly makes the file system mounted at dir read-only: what a
// mounted artifact or a snapshot is, and what stops even root from
// writing (permission bits do not). It skips the test where remounting is
// not allowed.
func RemountReadOnly(t testing.TB, dir string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot remount %s read-only: %v: %s", dir, err, bytes.TrimSpace(out))
	}
}
