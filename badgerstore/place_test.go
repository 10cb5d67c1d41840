//go:build unix

package badgerstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// names returns the names dir holds, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// A directory holding the user's files is no store: a writer is refused,
// with an error naming the subdirectory to use instead, and nothing is
// written beside the user's files, nor is the directory's mode changed.
// The subdirectory it names takes the store. Before, the store went in a
// child otelrecords/ of its own, a second place writers chased.
func TestADirectoryOfTheUsersIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "build")
	write(t, filepath.Join(dir, "notes.txt"), "the user's\n")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fix := filepath.Join(dir, "records")
	closed := func(st *badgerstore.Store, err error) error {
		if err == nil {
			st.Close()
		}
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for what, err := range map[string]error{
		"Place":    func() error { _, err := badgerstore.Place(dir); return err }(),
		"Open":     closed(badgerstore.Open(dir)),
		"OpenWait": closed(badgerstore.OpenWait(ctx, dir, nil)),
	} {
		if !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), `holds "notes.txt"`) || !strings.Contains(err.Error(), "use a subdirectory, e.g. "+fix) {
			t.Errorf("%s(%s) = %v, want ErrNotStoreDir naming notes.txt and %s", what, dir, err, fix)
		}
	}
	if got := names(t, dir); !slices.Equal(got, []string{"notes.txt"}) {
		t.Errorf("the user's directory holds %v, want notes.txt alone", got)
	}
	if got := modes(t, dir)["."]; got != 0o755 {
		t.Errorf("the user's directory has mode %v, want 0755 as it was", got)
	}
	writeSome(t, fix)
	if got := modes(t, fix)["."]; got != 0o700 {
		t.Errorf("the store's directory has mode %v, want 0700", got)
	}
	// A reader given the user's directory finds no store there.
	if _, err := badgerstore.Open(dir, badgerstore.WithReadOnly()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a reader given the user's directory: %v, want fs.ErrNotExist", err)
	}
}

// A shared directory (mode 1777, holding another user's file) is no
// store either, and keeps its mode and sticky bit; a store in a new
// directory inside it is created private. Before issue 21 the directory
// was chmod-ed to 0700; until the one rule, the store went in its child.
func TestSharedDirectoryKeepsItsMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	// Even empty: every user may put files in it.
	for _, held := range []string{"", "notes.txt"} {
		if held != "" {
			write(t, filepath.Join(dir, held), "mine")
		}
		st, err := badgerstore.Open(dir)
		if err == nil {
			st.Close()
		}
		if !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), "use a subdirectory, e.g. "+filepath.Join(dir, "records")) {
			t.Errorf("Open in a shared directory holding %q = %v, want ErrNotStoreDir naming a subdirectory", held, err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 || fi.Mode()&fs.ModeSticky == 0 {
		t.Errorf("shared directory mode became %v, want drwxrwxrwt as it was", fi.Mode())
	}
	if got := names(t, dir); !slices.Equal(got, []string{"notes.txt"}) {
		t.Errorf("shared directory holds %v, want notes.txt alone", got)
	}
	writeSome(t, filepath.Join(dir, "records"))
	if got := modes(t, filepath.Join(dir, "records"))["."]; got != 0o700 {
		t.Errorf("the store's own directory has mode %v, want 0700", got)
	}
}

// What an existing directory may hold and still be a store, or one to
// be: nothing, the lost+found of a file system mounted for the store,
// what a writer leaves before its store's first file (a request, a
// spool), the reserve. Each takes the store where it is, and keeps its
// mode.
func TestWhatAStoreToBeMayHold(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, dir string)
	}{
		{"nothing", func(*testing.T, string) {}},
		{"a lost+found", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "lost+found"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"a request", func(t *testing.T, dir string) { write(t, filepath.Join(dir, "otelrecords.waiting"), "4242\n") }},
		{"a spool", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "spool", "01764989000000000000-4242.cbor"), "")
		}},
		{"a reserve", func(t *testing.T, dir string) { write(t, filepath.Join(dir, "otelrecords.reserve"), "") }},
	} {
		for _, mode := range []fs.FileMode{0o700, 0o755} {
			dir := t.TempDir()
			c.make(t, dir)
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
			if got, err := badgerstore.Place(dir); err != nil || got != dir {
				t.Errorf("%s in a %o directory: Place = %s, %v; want the directory itself", c.name, mode, got, err)
				continue
			}
			if c.name == "a spool" {
				continue // its empty file does not decode: set aside, and said
			}
			writeSome(t, dir)
			if got := modes(t, dir)["."]; got != mode {
				t.Errorf("%s in a %o directory: its mode became %o", c.name, mode, got)
			}
		}
	}
}

// A store an earlier version put in the otelrecords/ child of a
// directory holding the user's files is read and written where it is, by
// writers and readers given the directory; nothing is created beside the
// user's files. A directory that is a store itself is the store, whatever
// its child holds.
func TestAStoreInTheLegacyChildStaysThere(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, badgerstore.LegacyChild)
	writeSome(t, child) // as an earlier version did
	write(t, filepath.Join(dir, "notes.txt"), "the user's\n")
	if got, err := badgerstore.Place(dir); err != nil || got != child {
		t.Fatalf("Place(%s) = %s, %v; want the store in %s", dir, got, err, child)
	}
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Path() != child {
		t.Errorf("Open(%s) opened %s, want %s", dir, st.Path(), child)
	}
	if err := st.Write([]sessions.Entry{{Key: []byte("records/v1/k2"), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range ro.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	ro.Close()
	if n != 2 {
		t.Errorf("a reader given %s read %d entries, want the 2 written in %s", dir, n, child)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"notes.txt", badgerstore.LegacyChild}) {
		t.Errorf("the user's directory holds %v, want notes.txt and the old store alone", got)
	}

	// A store with a second store in its child (two writers of an earlier
	// version racing): the directory's own.
	both := t.TempDir()
	writeSome(t, both)
	writeSome(t, filepath.Join(both, badgerstore.LegacyChild))
	if got, err := badgerstore.Place(both); err != nil || got != both {
		t.Errorf("Place of a store with a store in its child = %s, %v; want the store itself", got, err)
	}
}

// The path Place returns is its own answer: a writer that places its
// store once and opens, asks and spools there gets the same directory
// Place would give at any later moment, through a link and "..", a "~",
// a directory still to be created, and an earlier version's child.
func TestPlaceIsDecidedOnce(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	for _, d := range []string{filepath.Join(real, "sub"), filepath.Join(real, "other"), filepath.Join(base, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"link": "sub", "other": "other"} {
		if err := os.Symlink(filepath.Join(real, to), filepath.Join(base, "home", link)); err != nil {
			t.Fatal(err)
		}
	}
	legacy := filepath.Join(base, "legacy")
	writeSome(t, filepath.Join(legacy, badgerstore.LegacyChild))
	write(t, filepath.Join(legacy, "notes.txt"), "")
	t.Setenv("HOME", base)
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(base, "home", "link") + "/../new/store", filepath.Join(real, "new", "store")},
		{"~/home/link/x", filepath.Join(real, "sub", "x")},
		{legacy, filepath.Join(legacy, badgerstore.LegacyChild)},
		{"~/legacy/", filepath.Join(legacy, badgerstore.LegacyChild)},
		{filepath.Join(base, "home", "other"), filepath.Join(real, "other")},
	} {
		dir, want := c.dir, c.want
		got, err := badgerstore.Place(dir)
		if err != nil || got != want {
			t.Errorf("Place(%s) = %s, %v; want %s", dir, got, err, want)
			continue
		}
		writeSome(t, dir)
		if again, err := badgerstore.Place(got); err != nil || again != got {
			t.Errorf("Place(Place(%s)) = %s, %v; want %s", dir, again, err, got)
		}
		if !badgerstore.Exists(got) {
			t.Errorf("no store at %s after a write through %s", got, dir)
		}
	}
}

// Paths where no store can be written are refused at once, naming the
// path and what is wrong: a regular file, a socket (before, reported as
// "another process held the store"), a directory every user may write
// without the sticky bit, one another user owns, and one holding the
// user's files.
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
// store in it are given that directory, and never refused: what the
// creator has put there by then (its lock, its first logs, its request)
// is a store's own. Before, a directory seen empty by one look and holding
// the creator's first file at the next sent a writer into a second store
// of its own, which no reader of the directory read (three writers given
// one new directory lost a session that way).
func TestPlaceBesideAStoreBeingCreated(t *testing.T) {
	for i := range 60 {
		dir := t.TempDir()
		if i%2 == 0 {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
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
					if got != dir {
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
			t.Fatalf("Place(%s) gave %s while a store was created there (%d looks)", dir, *w, looks.Load())
		}
	}
}

// A reader given the directory whose otelrecords/ child holds an earlier
// version's store, waiting for a writer to let it go, asks for it in the
// store's own directory, where the holder looks: its request beside the
// user's files would ask no one.
func TestWaitingReaderAsksWhereTheStoreIs(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, badgerstore.LegacyChild)
	writeSome(t, child)
	write(t, filepath.Join(dir, "notes.txt"), "the user's\n")
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
	}, badgerstore.WithReadOnly())
	if !errors.Is(err, badgerstore.ErrLocked) || !asked {
		t.Fatalf("OpenWait beside a holder: %v (waited: %v); want ErrLocked after waiting", err, asked)
	}
	if _, err := os.Lstat(filepath.Join(child, "otelrecords.waiting")); err == nil {
		t.Error("the request was left behind once the reader gave up")
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
