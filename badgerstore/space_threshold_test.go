//go:build linux

package badgerstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/store/space"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// TestOneFreeSpaceThreshold checks that Open and Write keep the one
// threshold, MinFreeSpace, and that their messages state it: with a little
// less than MinFreeSpace free (and far more than the entries), a Write is
// refused and an Open too; with a little more than MinFreeSpace and the
// entries, both succeed. An open store holds reserveSize of the
// MinFreeSpace in its reserve, which counts as free for its Writes: the
// file system then shows reserveSize less. Before, a Write asked for 3
// MiB besides its entries, an Open for 43, and the documentation said 24
// and 64.
func TestOneFreeSpaceThreshold(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "256m")
	dir := filepath.Join(mnt, "store")
	s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	entries := badgerfmttest.Entries(1, 0, 10)
	// The reserve is held: 4 MiB less than MinFreeSpace beside it.
	filler := testsupport.Fill(t, mnt, MinFreeSpace-space.ReserveSize-4<<20)
	want := fmt.Sprintf("the store keeps %d MiB free", MinFreeSpace>>20)
	err = s.Write(entries)
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), want) {
		t.Errorf("Write with %d MiB free and the reserve = %v, want ErrNoSpace saying %q", (MinFreeSpace-4<<20)>>20, err, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed, the store gave its reserve back: the same 44 MiB are free.
	if _, err := os.Stat(filepath.Join(dir, space.ReserveName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, the reserve: %v; want it removed", err)
	}
	if s, err := Open(dir, WithErrorHandler(nil)); !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open with %d MiB free = %v, want ErrNoSpace saying %q", (MinFreeSpace-4<<20)>>20, err, want)
		if err == nil {
			s.Close()
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testsupport.Fill(t, mnt, MinFreeSpace+4<<20)
	s, err = Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatalf("Open with %d MiB free: %v", (MinFreeSpace+4<<20)>>20, err)
	}
	defer s.Close()
	if err := s.Write(entries); err != nil {
		t.Errorf("Write with %d MiB free: %v", (MinFreeSpace+4<<20)>>20, err)
	}
}
