package spool_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

func entries(kv ...string) []sessions.Entry {
	var es []sessions.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		es = append(es, sessions.Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return es
}

// written collects what Merge writes, batch by batch.
type written struct{ batches [][]string }

func (w *written) write(es []sessions.Entry) error {
	var b []string
	for _, e := range es {
		b = append(b, string(e.Key)+"="+string(e.Value))
	}
	w.batches = append(w.batches, b)
	return nil
}

func TestMergeOldestFirstAndRemoves(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	if spool.Has(store) {
		t.Fatal("Has on a store that does not exist")
	}
	if err := spool.Write(store, nil); err != nil || spool.Has(store) {
		t.Fatalf("Write of nothing = %v, Has = %v; want nil and nothing spooled", err, spool.Has(store))
	}
	if err := spool.Write(store, entries("b", "2", "c", "3")); err != nil {
		t.Fatal(err)
	}
	if err := spool.Write(store, entries("c", "3b")); err != nil {
		t.Fatal(err)
	}
	if !spool.Has(store) {
		t.Fatal("Has = false after Write")
	}
	for _, d := range []string{store, spool.Dir(store)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v; want a directory of mode 0700", d, fi.Mode(), err)
		}
	}
	var w written
	n, err := spool.Merge(store, w.write, func(err error) { t.Errorf("reported %v", err) })
	if err != nil || n != 3 {
		t.Fatalf("Merge = %d, %v; want 3 entries", n, err)
	}
	if want := [][]string{{"b=2", "c=3"}, {"c=3b"}}; !slices.EqualFunc(w.batches, want, slices.Equal) {
		t.Fatalf("merged %q, want %q (oldest file first)", w.batches, want)
	}
	if spool.Has(store) {
		t.Fatal("spool left after a merge")
	}
}

func TestMergeStopsAtAFailedWrite(t *testing.T) {
	store := t.TempDir()
	if err := spool.Write(store, entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	full := errors.New("no room")
	if _, err := spool.Merge(store, func([]sessions.Entry) error { return full }, nil); !errors.Is(err, full) {
		t.Fatalf("Merge = %v, want the write's error", err)
	}
	if !spool.Has(store) {
		t.Fatal("a file whose write failed was removed")
	}
}

func TestBadFileSetAside(t *testing.T) {
	store := t.TempDir()
	if err := spool.Write(store, entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(spool.Dir(store), "00000000000000000001-1.cbor")
	if err := os.WriteFile(bad, []byte{0xff, 0xfe}, 0o600); err != nil {
		t.Fatal(err)
	}
	// A temporary file, as a writer killed mid-spool leaves: never read.
	if err := os.WriteFile(filepath.Join(spool.Dir(store), ".tmp-123"), []byte{0xff}, 0o600); err != nil {
		t.Fatal(err)
	}
	var reported []error
	var w written
	if _, err := spool.Merge(store, w.write, func(err error) { reported = append(reported, err) }); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a=1"}}; !slices.EqualFunc(w.batches, want, slices.Equal) {
		t.Fatalf("merged %q, want the good file's %q", w.batches, want)
	}
	if _, err := os.Stat(bad + ".bad"); err != nil {
		t.Fatalf("the bad spool file was not set aside: %v", err)
	}
	if len(reported) != 1 {
		t.Fatalf("reported %v, want one report of the bad file", reported)
	}
	if spool.Has(store) {
		t.Fatal("a .bad file counts as spooled")
	}
}

// Two spills within one tick of the clock (a clock that does not move is
// what synctest gives, and what a coarse clock gives two writers of one
// process shutting down together) are two files: neither replaces the
// other.
func TestSpillsInOneTickKeepEachOther(t *testing.T) {
	store := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		for _, kv := range [][]string{{"a", "1"}, {"b", "2"}, {"a", "3"}} {
			if err := spool.Write(store, entries(kv...)); err != nil {
				t.Fatal(err)
			}
		}
	})
	var w written
	if _, err := spool.Merge(store, w.write, nil); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a=1"}, {"b=2"}, {"a=3"}}; !slices.EqualFunc(w.batches, want, slices.Equal) {
		t.Fatalf("merged %q, want %q: every spill, in the order written", w.batches, want)
	}
}

// A spool travels with its store, and a store can come from anywhere: a
// spool that is a link is refused, naming it, and nothing it points to is
// read, renamed, removed or written.
func TestSpoolThatIsALinkIsRefused(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := spool.Write(elsewhere, entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	before := filesIn(t, spool.Dir(elsewhere))
	store := t.TempDir()
	if err := os.Symlink(spool.Dir(elsewhere), spool.Dir(store)); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), spool.Dir(store)) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s on a spool that is a link = %v, want an error naming it as a link", what, err)
		}
	}
	var w written
	_, err := spool.Merge(store, w.write, func(err error) { t.Errorf("reported %v", err) })
	refused("Merge", err)
	if len(w.batches) != 0 {
		t.Errorf("Merge wrote %q through the link", w.batches)
	}
	_, err = spool.Read(store, 1<<20, nil)
	refused("Read", err)
	refused("Write", spool.Write(store, entries("b", "2")))
	if !spool.Has(store) {
		t.Error("Has = false: an opener would not see the spool to refuse it")
	}
	if after := filesIn(t, spool.Dir(elsewhere)); !maps.Equal(before, after) {
		t.Errorf("the directory the link points to changed: %v, was %v", after, before)
	}
}

// filesIn returns the name and content of every file in dir.
func filesIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, de := range des {
		b, _ := os.ReadFile(filepath.Join(dir, de.Name()))
		out[de.Name()] = string(b)
	}
	return out
}

// Write keeps every file within MaxFile, which readers refuse to exceed,
// splitting a large spill into files that merge in order.
func TestWriteSplitsAtMaxFile(t *testing.T) {
	store := t.TempDir()
	big := strings.Repeat("v", 25<<20)
	if err := spool.Write(store, entries("a", big, "b", big, "c", big)); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(spool.Dir(store))
	if err != nil || len(des) != 2 {
		t.Fatalf("spool holds %d files, %v; want the three 25 MiB entries in two", len(des), err)
	}
	for _, de := range des {
		if fi, _ := de.Info(); fi.Size() > spool.MaxFile {
			t.Errorf("%s is %d bytes, over MaxFile", de.Name(), fi.Size())
		}
	}
	var keys []string
	if _, err := spool.Merge(store, func(es []sessions.Entry) error {
		for _, e := range es {
			keys = append(keys, string(e.Key))
		}
		return nil
	}, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Fatalf("merged %v, want a, b, c in order", keys)
	}
}

func TestReadKeepsABoundedAmount(t *testing.T) {
	store := t.TempDir()
	for range 3 {
		if err := spool.Write(store, entries("k", strings.Repeat("v", 1000))); err != nil {
			t.Fatal(err)
		}
	}
	if files, err := spool.Read(store, 10_000, nil); err != nil || len(files) != 3 {
		t.Fatalf("Read = %d files, %v; want 3", len(files), err)
	}
	if _, err := spool.Read(store, 2_500, nil); err == nil || !strings.Contains(err.Error(), "a writer merges it") {
		t.Fatalf("Read over its limit = %v, want an error saying a writer merges the spool", err)
	}
}
