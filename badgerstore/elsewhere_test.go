//go:build unix

package badgerstore_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/badgerstore/doctor"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
)

// TestStoreFromElsewhereReachesNothingOutside puts, where a store keeps a
// file, what a tarball or another user can put there: links out of the
// store, a FIFO, a link to /dev/zero. Every way in (a writer's Open, a
// reader's Open and OpenWait, Verify, Recover) refuses the store, naming
// the entry, promptly, and changes nothing it points to. Before, a reader's
// OpenWait on a store whose spool linked elsewhere renamed and removed the
// files there and wrote their records into the store; a FIFO log blocked
// every opener; Badger appended to a linked MANIFEST.
func TestStoreFromElsewhereReachesNothingOutside(t *testing.T) {
	cases := []struct {
		name  string
		entry string // the entry made unsafe
		make  func(t *testing.T, path, outside string)
	}{
		{"spool links out of the store", "spool", func(t *testing.T, path, outside string) {
			if err := os.Rename(path, filepath.Join(outside, "spool")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "spool"), path); err != nil {
				t.Fatal(err)
			}
		}},
		{"MANIFEST links out of the store", badger.ManifestFilename, func(t *testing.T, path, outside string) {
			if err := os.Rename(path, filepath.Join(outside, "MANIFEST")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "MANIFEST"), path); err != nil {
				t.Fatal(err)
			}
		}},
		{"marker links out of the store", "otelrecords.waiting", func(t *testing.T, path, outside string) {
			if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "precious"), path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a log is a FIFO", "00009.mem", func(t *testing.T, path, outside string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
		}},
		{"a value log links to /dev/zero", "000009.vlog", func(t *testing.T, path, outside string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			outside := t.TempDir()
			badgerstore.StoreWithSpool(t, dir)
			path := filepath.Join(dir, c.entry)
			c.make(t, path, outside)
			before := badgerfmttest.FilesIn(t, outside)
			beforeSpool := map[string]string{}
			if _, err := os.Stat(filepath.Join(outside, "spool")); err == nil {
				beforeSpool = badgerfmttest.FilesIn(t, filepath.Join(outside, "spool"))
			}

			ways := map[string]func() error{
				"badgerstore.Open":           func() error { return openClose(badgerstore.Open(dir)) },
				"read-only badgerstore.Open": func() error { return openClose(badgerstore.Open(dir, badgerstore.WithReadOnly())) },
				"read-only badgerstore.OpenWait": func() error {
					return openClose(badgerstore.OpenWait(context.Background(), dir, nil, badgerstore.WithReadOnly()))
				},
				"Verify":  func() error { _, err := doctor.Verify(dir); return err },
				"Recover": func() error { _, err := doctor.Recover(dir); return err },
			}
			for way, fn := range ways {
				var err error
				badgerstore.Within(t, way, func() { err = fn() })
				if !errors.Is(err, badgerstore.ErrUnsafeFile) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s = %v; want badgerstore.ErrUnsafeFile naming %s", way, err, path)
				}
			}
			if after := badgerfmttest.FilesIn(t, outside); !maps.Equal(before, after) {
				t.Errorf("files outside the store changed:\n%v\nwere\n%v", after, before)
			}
			if _, err := os.Stat(filepath.Join(outside, "spool")); err == nil {
				if after := badgerfmttest.FilesIn(t, filepath.Join(outside, "spool")); !maps.Equal(beforeSpool, after) {
					t.Errorf("the spool outside the store changed:\n%v\nwere\n%v", after, beforeSpool)
				}
			}
		})
	}
}

// openClose closes the store an Open returned, and returns its error.
func openClose(st *badgerstore.Store, err error) error {
	if err == nil {
		err = st.Close()
	}
	return err
}
