//go:build unix

package badgerstore

import (
	"context"
	"errors"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

// within runs fn and fails the test if it has not returned after a while:
// what a FIFO would make it do.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// storeWithSpool makes a closed store in dir holding a=1, with one spool
// file holding b=2.
func storeWithSpool(t *testing.T, dir string) {
	t.Helper()
	closedStore(t, dir, "a", "1")
	if err := spool.Write(dir, []sessions.Entry{{Key: []byte("b"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
}

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
			storeWithSpool(t, dir)
			path := filepath.Join(dir, c.entry)
			c.make(t, path, outside)
			before := badgerfmttest.FilesIn(t, outside)
			beforeSpool := map[string]string{}
			if _, err := os.Stat(filepath.Join(outside, "spool")); err == nil {
				beforeSpool = badgerfmttest.FilesIn(t, filepath.Join(outside, "spool"))
			}

			ways := map[string]func() error{
				"Open":           func() error { return openClose(Open(dir)) },
				"read-only Open": func() error { return openClose(Open(dir, WithReadOnly())) },
				"read-only OpenWait": func() error {
					return openClose(OpenWait(context.Background(), dir, nil, WithReadOnly()))
				},
				"Verify":  func() error { _, err := Verify(dir); return err },
				"Recover": func() error { _, err := Recover(dir); return err },
			}
			for way, fn := range ways {
				var err error
				within(t, way, func() { err = fn() })
				if !errors.Is(err, ErrUnsafeFile) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s = %v; want ErrUnsafeFile naming %s", way, err, path)
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
func openClose(st *Store, err error) error {
	if err == nil {
		err = st.Close()
	}
	return err
}

// TestSpoolFilesThatCannotBeReadAreSetAside puts a FIFO and a link to
// /dev/zero in the spool, named like spool files: an opener neither
// blocks on the one nor reads the other without end; it sets both aside
// and merges the good file. Before, the FIFO blocked every opener (and a
// host's Shutdown) forever, and /dev/zero was read until memory ran out.
func TestSpoolFilesThatCannotBeReadAreSetAside(t *testing.T) {
	for _, reader := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "store")
		storeWithSpool(t, dir)
		fifo := filepath.Join(spool.Dir(dir), "00000000000000000001-1.cbor")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("no FIFO here: %v", err)
		}
		zero := filepath.Join(spool.Dir(dir), "00000000000000000002-1.cbor")
		if err := os.Symlink("/dev/zero", zero); err != nil {
			t.Fatal(err)
		}
		var log testsupport.Errors
		var st *Store
		var err error
		within(t, "Open", func() {
			if reader {
				st, err = OpenWait(context.Background(), dir, nil, WithReadOnly(), WithErrorHandler(log.Handle))
			} else {
				st, err = Open(dir, WithErrorHandler(log.Handle))
			}
		})
		if err != nil {
			t.Fatalf("reader=%v: %v", reader, err)
		}
		got := scan(t, st)
		st.Close()
		if want := map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) {
			t.Errorf("reader=%v: store = %v, want %v", reader, got, want)
		}
		if errs := log.All(); len(errs) != 2 {
			t.Errorf("reader=%v: reported %v, want the FIFO and the link", reader, errs)
		}
		for _, f := range []string{fifo, zero} {
			if _, err := os.Lstat(f + ".bad"); err != nil {
				t.Errorf("reader=%v: %s not set aside: %v", reader, f, err)
			}
		}
	}
}

// TestStoreThroughALink opens a store through a link to its directory
// (the user's choice): it works, and the spool and marker are the
// directory's.
func TestStoreThroughALink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	storeWithSpool(t, dir)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	st, err := OpenWait(context.Background(), link, nil, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	got := scan(t, st)
	st.Close()
	if want := map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) || spool.Has(dir) {
		t.Fatalf("through a link: store = %v (spool left: %v), want %v merged", got, spool.Has(dir), want)
	}
	if st.Dir() != link {
		t.Errorf("Dir() = %s, want %s, as given", st.Dir(), link)
	}
}
