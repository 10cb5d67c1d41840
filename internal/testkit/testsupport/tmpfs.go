package testsupport

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// MountTmpfs mounts a tmpfs of the given size (like "8m") at dir, creating
// dir, and unmounts it at cleanup. It skips the test where mounting is not
// allowed: not Linux, not root, or no CAP_SYS_ADMIN.
func MountTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("tmpfs mounts are Linux's")
	}
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

// Remount remounts the file system mounted at dir (by MountTmpfs) with
// opts: "ro" and "rw" to turn it read-only and back, "size=128m" to give
// it room.
func Remount(t testing.TB, dir, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s %s: %v: %s", dir, opts, err, out)
	}
}

// Fill writes a file into dir until the file system is full, then gives
// back leave bytes, and returns the file's path: delete it to make room.
func Fill(t testing.TB, dir string, leave int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{1}, 1<<20)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if err != nil {
			break // full
		}
	}
	if err := f.Truncate(max(size-leave, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

// FillFromOutside fills the file system holding dir to 0 bytes free from
// another process, as a user's dd does — it stops when the file system
// refuses it (ENOSPC) — and returns the file it wrote: delete it to make
// room. The process being another is the point: its writes race the
// test's for the last free blocks.
func FillFromOutside(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	dd := exec.Command("dd", "if=/dev/zero", "of="+path, "bs=1M")
	if out, err := dd.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("No space left")) {
		t.Fatalf("dd filling %s: %v\n%s", dir, err, out)
	}
	return path
}

// Fills returns how many times a test fills a disk: the number in
// OTELRECORDS_TEST_FILLS, or def.
func Fills(t testing.TB, def int) int {
	t.Helper()
	s := os.Getenv("OTELRECORDS_TEST_FILLS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("OTELRECORDS_TEST_FILLS=%q: want a number of fills", s)
	}
	return n
}
