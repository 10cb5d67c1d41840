//go:build unix

package badgerstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// modes returns the permission bits of dir and of every file in it (not
// below it), by name.
func modes(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	out["."] = fi.Mode().Perm()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if de.Type().IsRegular() {
			info, err := de.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[de.Name()] = info.Mode().Perm()
		}
	}
	return out
}

// writeSome opens the store in dir read-write, writes a few entries and
// closes it, which flushes Badger's memtable into a table.
func writeSome(t *testing.T, dir string) {
	t.Helper()
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write([]sessions.Entry{{Key: []byte("records/v1/k"), Value: []byte("secret")}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// withUmask runs f with the process's umask set to mask. The umask is the
// whole process's: no test of this package runs in parallel.
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// TestStoreIsPrivate: a store created in a new directory, even under a
// umask of 000, which makes what Badger creates world-writable, ends with
// its directory 0700 and every file in it 0600. In an empty directory
// that already existed (mkdir -p build/records, mode 0755) the store is
// created there, the directory keeps its mode, and the files are 0600 all
// the same; one writable by every user without the sticky bit (mkdir
// under umask 000) is refused. Before issue 21, the existing directory
// was chmod-ed to 0700; until the one rule, the store went in a child of
// its own.
func TestStoreIsPrivate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		umask  int
		exists bool
	}{
		{"existing directory", 0o022, true},
		{"new directory, umask 000", 0, false},
		{"existing directory, umask 000", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "build", "records")
			withUmask(tc.umask, func() {
				if tc.exists {
					if err := os.MkdirAll(dir, 0o777); err != nil {
						t.Fatal(err)
					}
				}
				if tc.exists && tc.umask == 0 {
					if _, err := badgerstore.Open(dir); !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), "sticky") {
						t.Fatalf("Open in a directory of mode 0777 = %v, want ErrNotStoreDir", err)
					}
					return
				}
				writeSome(t, dir)
				writeSome(t, dir) // a second spell, as a shared writer has
			})
			if tc.exists {
				want := os.FileMode(0o777 &^ tc.umask)
				if got := modes(t, dir)["."]; got != want {
					t.Errorf("the existing directory's mode became %v, want %v as it was", got, want)
				}
				if tc.umask == 0 {
					return
				}
			}
			got := modes(t, dir)
			if want := os.FileMode(0o700); !tc.exists && got["."] != want {
				t.Errorf("directory mode %v, want %v", got["."], want)
			}
			tables := 0
			for name, m := range got {
				if name != "." && m != 0o600 {
					t.Errorf("%s: mode %v, want 0600", name, m)
				}
				if filepath.Ext(name) == ".sst" {
					tables++
				}
			}
			if tables == 0 {
				t.Errorf("no table was written, so none was checked: %v", got)
			}
		})
	}
}

// The files a read-write Open finds and those Badger's open creates (its
// write-ahead log, a new value log, LOCK) and the reserve are private
// while the store is open, not only after Close: Open lists the directory
// once after Badger's open for the reserve and this pass, and looks at
// the reserve, created after that listing, by name.
func TestOpenStoreIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "records")
	withUmask(0, func() {
		writeSome(t, dir)
		st, err := badgerstore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		got := modes(t, dir)
		for _, want := range []string{"LOCK", "otelrecords.reserve"} {
			if _, ok := got[want]; !ok {
				t.Errorf("no %s in the open store: %v", want, got)
			}
		}
		for name, m := range got {
			if name != "." && m != 0o600 {
				t.Errorf("%s: mode %v while the store is open, want 0600", name, m)
			}
		}
	})
}

// TestStoreKeepsItsOwnersMode: a directory that already holds a store
// keeps the mode its owner gave it, and so do its files: a group that
// reads the store goes on reading it.
func TestStoreKeepsItsOwnersMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeSome(t, dir)
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "MANIFEST")
	if err := os.Chmod(manifest, 0o640); err != nil {
		t.Fatal(err)
	}
	writeSome(t, dir)
	got := modes(t, dir)
	if got["."] != 0o750 || got["MANIFEST"] != 0o640 {
		t.Errorf("directory %v, MANIFEST %v; want 0750 and 0640 as their owner set them", got["."], got["MANIFEST"])
	}
}
