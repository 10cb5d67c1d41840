package spool_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/otelrecords/otelrecords/internal/spool"
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
