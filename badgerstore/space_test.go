//go:build linux

package badgerstore

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/otelrecords/otelrecords/internal/testsupport"
)

// mountTmpfs mounts a tmpfs of the given size at dir until cleanup, or
// skips the test where mounting is not allowed.
func mountTmpfs(t *testing.T, dir, size string) { testsupport.MountTmpfs(t, dir, size) }

// fillUpTo writes a file into dir until the file system is full, then
// gives back leave bytes.
func fillUpTo(t *testing.T, dir string, leave int64) string {
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
			break
		}
	}
	if err := f.Truncate(max(size-leave, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNoSpace checks the store on a file system that is, then becomes,
// too full: a read-write Open is refused with ErrNoSpace (and ENOSPC)
// while less than minFreeSpace is free, a Write while less than
// minWriteSpace and its entries are; nothing refused is written, nothing
// written is lost, and the process — which Badger would crash with SIGBUS
// through its memory maps — keeps running. Room again, both work.
func TestNoSpace(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	mountTmpfs(t, mnt, "8m")
	dir := filepath.Join(mnt, "store")
	_, err := Open(dir, WithErrorHandler(nil))
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open on 8 MiB = %v, want ErrNoSpace naming %s", err, dir)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=128m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatalf("Open with room: %v", err)
	}
	first := testEntries(1, 0, 100)
	if err := s.Write(first); err != nil {
		t.Fatal(err)
	}

	filler := fillUpTo(t, mnt, 16<<20)
	refused := testEntries(1, 100, 100)
	if err := s.Write(refused); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Write with 16 MiB free = %v, want ErrNoSpace", err)
	}
	if got := scan(t, s); len(got) != len(first) {
		t.Errorf("after a refused Write the store holds %d entries, want %d", len(got), len(first))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(refused); err != nil {
		t.Fatalf("Write with room again: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, dir)); got != 200 {
		t.Errorf("%d entries after reopening, want 200", got)
	}
}
