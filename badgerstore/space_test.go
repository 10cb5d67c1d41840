//go:build linux

package badgerstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// TestNoSpace checks the store on a file system that is, then becomes,
// too full: a read-write Open is refused with ErrNoSpace (and ENOSPC)
// while less than MinFreeSpace is free, a Write while less than
// MinFreeSpace and its entries are; nothing refused is written, nothing
// written is lost, and the process — which Badger would crash with SIGBUS
// through its memory maps — keeps running. Room again, both work.
func TestNoSpace(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "8m")
	dir := filepath.Join(mnt, "store")
	_, err := Open(dir, WithErrorHandler(nil))
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open on 8 MiB = %v, want ErrNoSpace naming %s", err, dir)
	}
	testsupport.Remount(t, mnt, "size=128m")
	s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatalf("Open with room: %v", err)
	}
	first := badgerfmttest.Entries(1, 0, 100)
	if err := s.Write(first); err != nil {
		t.Fatal(err)
	}

	filler := testsupport.Fill(t, mnt, 1<<20)
	refused := badgerfmttest.Entries(1, 100, 100)
	if err := s.Write(refused); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Write with 1 MiB free = %v, want ErrNoSpace", err)
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
