//go:build unix

package badgerstore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
