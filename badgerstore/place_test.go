//go:build unix

package badgerstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// A shared directory (mode 1777, holding another user's file) keeps its
// mode and sticky bit: the store is created in a child of its own, mode
// 0700, and a reader given the shared directory finds it there. Before,
// the directory was chmod-ed to 0700, its sticky bit gone, and Badger's
// files landed beside the user's own.
func TestSharedDirectoryKeepsItsMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := badgerstore.Place(dir); err != nil || p != filepath.Join(dir, badgerstore.ChildDir) {
		t.Fatalf("Place = %q, %v; want its child %s", p, err, badgerstore.ChildDir)
	}
	writeSome(t, dir)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 || fi.Mode()&fs.ModeSticky == 0 {
		t.Errorf("shared directory mode became %v, want drwxrwxrwt as it was", fi.Mode())
	}
	names, _ := os.ReadDir(dir)
	if len(names) != 2 {
		t.Errorf("shared directory holds %v, want notes.txt and %s alone", names, badgerstore.ChildDir)
	}
	if got := modes(t, filepath.Join(dir, badgerstore.ChildDir))["."]; got != 0o700 {
		t.Errorf("the store's own directory has mode %v, want 0700", got)
	}
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatalf("a reader given the shared directory: %v", err)
	}
	st.Close()
	// Again, through the store: it stays where it is.
	writeSome(t, dir)
	if p, err := badgerstore.Place(dir); err != nil || p != filepath.Join(dir, badgerstore.ChildDir) {
		t.Fatalf("Place once the store exists = %q, %v", p, err)
	}
}

// Paths where no store can be written are refused at once, naming the
// path and what is wrong: a regular file, a socket (before, reported as
// "another process held the store"), a directory every user may write
// without the sticky bit, and one another user owns.
func TestPlacesNoStoreCanBeWrittenIn(t *testing.T) {
	cases := testsupport.NoStorePaths(t)
	for path, want := range cases {
		if _, err := badgerstore.Place(path); !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), want) {
			t.Errorf("Place(%s) = %v, want ErrNotStoreDir saying %q", path, err, want)
		}
		if _, err := badgerstore.Open(path); !errors.Is(err, badgerstore.ErrNotStoreDir) || errors.Is(err, badgerstore.ErrLocked) {
			t.Errorf("Open(%s) = %v, want ErrNotStoreDir", path, err)
		}
		if fi, err := os.Stat(path); err == nil && fi.IsDir() && want == "no sticky bit" && fi.Mode().Perm() != 0o777 {
			t.Errorf("refused directory %s: mode became %v", path, fi.Mode())
		}
	}
}

// "~" is the home directory, as a shell would have it.
func TestTildeIsHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeSome(t, "~/records")
	if _, err := os.Stat(filepath.Join(home, "records", "MANIFEST")); err != nil {
		t.Fatalf("no store under $HOME/records: %v", err)
	}
	if _, err := os.Stat("~"); err == nil {
		t.Fatal("a directory named ~ was created")
	}
	if got := badgerstore.ExpandHome("~user/x"); got != "~user/x" {
		t.Errorf("ExpandHome(~user/x) = %q", got)
	}
}

// Writers that find a store's directory while another is creating the
// store in it put theirs there too, never in ChildDir: a directory seen
// empty by one look and holding the creator's first file at the next sent
// a writer into ChildDir, a store of its own no reader of the directory
// reads (three writers given one new directory lost a session that way).
func TestPlaceBesideAStoreBeingCreated(t *testing.T) {
	for i := range 60 {
		// Empty and no other user's, the store goes in it; one others may
		// enter gets a ChildDir for the store.
		dir := t.TempDir()
		want := filepath.Join(dir, badgerstore.ChildDir)
		if i%2 == 0 {
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			want = dir
		}
		done := make(chan struct{})
		var wrong atomic.Pointer[string]
		var looks atomic.Int64
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					got, err := badgerstore.Place(dir)
					if err != nil {
						t.Error(err)
						return
					}
					if got != want {
						wrong.Store(&got)
					}
					looks.Add(1)
				}
			})
		}
		st, err := badgerstore.Open(dir)
		if err == nil {
			err = st.Close()
		}
		close(done)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if w := wrong.Load(); w != nil {
			t.Fatalf("Place(%s) gave %s while a store was created in %s (%d looks)", dir, *w, want, looks.Load())
		}
	}
}

// A reader given the directory whose ChildDir holds the store, waiting
// for a writer to let it go, asks for it in the store's own directory:
// its request beside the user's files looked like a store there, and the
// next writer given the directory put a second store in it, which no
// reader of the first one reads.
func TestWaitingReaderAsksWhereTheStoreIs(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, badgerstore.ChildDir)
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	asked := false
	_, err = badgerstore.OpenWait(ctx, dir, func(error) {
		asked = true
		if _, err := os.Lstat(filepath.Join(dir, "otelrecords.waiting")); err == nil {
			t.Errorf("the reader's request is in %s, beside the user's files", dir)
		}
		if _, err := os.Lstat(filepath.Join(child, "otelrecords.waiting")); err != nil {
			t.Errorf("no request in the store's directory %s: %v", child, err)
		}
		if got, err := badgerstore.Place(dir); err != nil || got != child {
			t.Errorf("while the reader waits, Place(%s) = %s, %v; want the store's %s", dir, got, err, child)
		}
	}, badgerstore.WithReadOnly())
	if !errors.Is(err, badgerstore.ErrLocked) || !asked {
		t.Fatalf("OpenWait beside a holder: %v (waited: %v); want ErrLocked after waiting", err, asked)
	}
	if _, err := os.Lstat(filepath.Join(child, "otelrecords.waiting")); err == nil {
		t.Error("the request was left behind once the reader gave up")
	}
}

// A request or a spool alone marks a store being created only in a
// directory no other user can enter, where a writer made it: in a shared
// one (a stale request from an older reader, or one another user put
// there), the store still goes in ChildDir, not beside other users. And
// only a writer's: a folder of the user's named spool, or a link where
// the request would be, is not one.
func TestARequestInASharedDirectoryIsNoStore(t *testing.T) {
	for _, c := range []struct {
		name  string
		make  func(t *testing.T, dir string)
		store bool // in a private directory, a store being created
	}{
		{"a request", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "otelrecords.waiting"), "4242\n")
		}, true},
		{"a writer's spool", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "spool", "01764989000000000000-4242.cbor"), "")
		}, true},
		{"a folder of the user's named spool", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "spool", "data.cbor"), "the user's\n")
		}, false},
		{"a link where the request would be", func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/hostname", filepath.Join(dir, "otelrecords.waiting")); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		dir := t.TempDir()
		c.make(t, dir)
		for _, mode := range []fs.FileMode{0o755, 0o700} {
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(dir, badgerstore.ChildDir)
			if mode == 0o700 && c.store {
				want = dir
			}
			if got, err := badgerstore.Place(dir); err != nil || got != want {
				t.Errorf("%s alone in a %o directory: Place = %s, %v; want %s", c.name, mode, got, err, want)
			}
		}
	}
}

// write writes a file at path, and the directories it needs.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
