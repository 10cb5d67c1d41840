//go:build unix

package spool_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

// Every kind of spool file that can never be merged is set aside, reported
// once in a short message, and the newer files are merged all the same;
// nothing blocks (a FIFO), reads without end (/dev/zero) or follows a link.
// A reader that cannot write (Read) reports and skips them, changing
// nothing.
func TestFilesThatCannotBeMergedAreSetAside(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.cbor")
	good, err := cbor.Marshal([][][]byte{{[]byte("x"), []byte("from outside")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, good, 0o600); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	if err := spool.Write(store, entries("a", "1")); err != nil { // the newest, and good
		t.Fatal(err)
	}
	dir := spool.Dir(store)
	bad := map[string]func(path string) error{
		"00000000000000000001-1.cbor": func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"00000000000000000002-1.cbor": func(p string) error { return os.Symlink("/dev/zero", p) },
		"00000000000000000003-1.cbor": func(p string) error { return os.Symlink(outside, p) },
		"00000000000000000004-1.cbor": func(p string) error { // sparse: costs no disk
			f, err := os.Create(p)
			if err == nil {
				err = errors.Join(f.Truncate(spool.MaxFile+1), f.Close())
			}
			return err
		},
		"00000000000000000005-1.cbor": func(p string) error { return os.WriteFile(p, []byte{0xff, 0xfe}, 0o600) },
		"00000000000000000006-1.cbor": func(p string) error { // the store rejects it
			b, _ := cbor.Marshal([][][]byte{{[]byte("rejected"), []byte("v")}})
			return os.WriteFile(p, b, 0o600)
		},
	}
	for name, make := range bad {
		if err := make(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { fn(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked", what)
		}
	}

	// A reader: everything reported but the rejected file, which only a
	// store rejects; the good files read; nothing renamed.
	var files []spool.File
	var reported []error
	within("Read", func() { files, err = spool.Read(store, 1<<20, func(err error) { reported = append(reported, err) }) })
	if err != nil || len(files) != 2 || string(files[0].Entries[0].Key) != "rejected" || string(files[1].Entries[0].Key) != "a" {
		t.Fatalf("Read = %v, %v; want the rejected file's entry and the good one", files, err)
	}
	if len(reported) != 5 {
		t.Errorf("Read reported %d files, want 5: %v", len(reported), reported)
	}
	if des, _ := os.ReadDir(dir); len(des) != 7 {
		t.Fatalf("Read changed the spool: %d files", len(des))
	}

	// A writer: all six set aside, the good file merged.
	reported = nil
	var w written
	write := func(es []sessions.Entry) error {
		if string(es[0].Key) == "rejected" {
			return spool.Reject(errors.New("entry 1 is not for this store"))
		}
		return w.write(es)
	}
	var n int
	within("Merge", func() { n, err = spool.Merge(store, write, func(err error) { reported = append(reported, err) }) })
	if err != nil || n != 1 {
		t.Fatalf("Merge = %d, %v; want the good file's entry", n, err)
	}
	if want := [][]string{{"a=1"}}; !slices.EqualFunc(w.batches, want, slices.Equal) {
		t.Fatalf("merged %q, want %q", w.batches, want)
	}
	if len(reported) != 6 {
		t.Fatalf("reported %d files, want 6: %v", len(reported), reported)
	}
	for _, err := range reported {
		if len(err.Error()) > 400 || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), ".bad") {
			t.Errorf("report %q: want a short message naming the file and where it was set aside", err)
		}
	}
	for name := range bad {
		if _, err := os.Lstat(filepath.Join(dir, name+".bad")); err != nil {
			t.Errorf("%s not set aside: %v", name, err)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || !bytes.Equal(b, good) {
		t.Errorf("the file a spool link pointed to changed: %v", err)
	}
	if spool.Has(store) {
		t.Error("files set aside still count as spooled")
	}
	reported = nil
	if _, err := spool.Merge(store, write, func(err error) { reported = append(reported, err) }); err != nil || len(reported) != 0 {
		t.Errorf("a second Merge = %v, reported %v; want nothing (each bad file is reported once)", err, reported)
	}
}
