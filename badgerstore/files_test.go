//go:build unix

package badgerstore

import (
	"context"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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
