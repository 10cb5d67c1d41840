package sharedstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/otelrecords/otelrecords/badgerstore"
	_ "github.com/otelrecords/otelrecords/internal/testkit/testsupport" // the stores it opens remember their files in a cache of the tests'
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
)

// Records a writer set aside before there was a store (its first open
// failed: a full disk) are in the store the next opener makes: the spool
// is a store's own, and the directory holding it the store's.
func TestSpoolBeforeTheStoreIsMerged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	w := sharedstore.New(dir, nil)
	if err := w.Spool(entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := contents(t, st); got != "a=1" {
		t.Errorf("store holds %q, want a=1 (in %s)", got, st.Path())
	}
}

// A writer whose directory did not exist when it was set up, and which
// the user then made (mode 0755), spools there, for the next opener to
// merge; another process's writer created the store there meanwhile.
// Before the one rule, such a directory sent the store into a child of
// its own, and the spool after it.
func TestSpoolGoesWhereItWasPlaced(t *testing.T) {
	dir, err := badgerstore.Place(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	w := sharedstore.New(dir, nil)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	other, err := badgerstore.Open(dir) // another process's writer
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Spool(entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, err := badgerstore.OpenWait(context.Background(), dir, nil, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := contents(t, st); got != "a=1" || st.Path() != dir {
		t.Errorf("readers see %q in %s, want a=1 in %s", got, st.Path(), dir)
	}
}

// A directory named through a link and "..", as a build script may name
// it, is placed where Open puts the store (its links followed), and the
// Writer's spool goes there too: read as text, the path names another
// directory.
func TestSpoolFollowsLinksAsTheStoreDoes(t *testing.T) {
	base := t.TempDir()
	records := filepath.Join(base, "real", "records")
	for _, d := range []string{filepath.Join(base, "real", "sub"), records, filepath.Join(base, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "real", "sub"), filepath.Join(base, "home", "link")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "home", "link") + "/../records" // real/records, through the link
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	placed, err := badgerstore.Place(dir)
	if err != nil || placed != records {
		t.Fatalf("Place(%s) = %s, %v; want %s", dir, placed, err, records)
	}
	w := sharedstore.New(placed, nil)
	if err := w.Spool(entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if st, err = badgerstore.Open(dir); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := contents(t, st); got != "a=1" {
		t.Errorf("the store in %s holds %q, want a=1", st.Path(), got)
	}
}
