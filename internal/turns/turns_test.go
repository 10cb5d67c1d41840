package turns_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/turns"
)

// The marker's times are the file system's, which synctest's clock does
// not move: these tests set them with Chtimes instead.
func TestAskedByAnotherFreshWaiter(t *testing.T) {
	dir := t.TempDir()
	holder, waiter := turns.WriterToken(), turns.ReaderToken()
	opened := time.Now()
	if turns.Asked(dir, holder, opened) {
		t.Fatal("asked with no marker")
	}
	turns.Ask(dir, waiter)
	if !turns.Asked(dir, holder, opened) {
		t.Fatal("a fresh request from a reader was not seen")
	}
	if turns.Asked(dir, waiter, opened) {
		t.Fatal("an opener's own request counts as another's")
	}
	marker := filepath.Join(dir, "otelrecords.waiting")
	if b, _ := os.ReadFile(marker); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("marker %q, want the pid and a newline (docs/FORMAT.md §7)", b)
	}

	old := time.Now().Add(-3 * time.Second)
	if err := os.Chtimes(marker, old, old); err != nil {
		t.Fatal(err)
	}
	if turns.Asked(dir, holder, opened) {
		t.Fatal("a stale marker counts as a request")
	}
	// Fresh, but written well before the holder opened the store: a request
	// someone else already served.
	turns.Ask(dir, waiter)
	if turns.Asked(dir, holder, time.Now().Add(10*time.Second)) {
		t.Fatal("a request older than the holder's open counts")
	}
}

func TestWriterTokensDiffer(t *testing.T) {
	a, b := turns.WriterToken(), turns.WriterToken()
	pid := strconv.Itoa(os.Getpid()) + "/"
	if a == b || !strings.HasPrefix(a, pid) || !strings.HasPrefix(b, pid) {
		t.Fatalf("writer tokens %q and %q, want two distinct <pid>/<n>", a, b)
	}
}

func TestAskOnAReadOnlyDirectoryIsHarmless(t *testing.T) {
	if err := turns.Ask(filepath.Join(t.TempDir(), "missing"), turns.ReaderToken()); err == nil {
		t.Fatal("Ask in a missing directory succeeded")
	}
}

// A store can come from anywhere (a tarball can carry links and FIFOs):
// the marker is written and read only as a regular file inside the store,
// never through a link, and nothing about it blocks or reads without end.
func TestMarkerIsOnlyARegularFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("12345/1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		make func(marker string) error
		kind string // what the error says the marker is
	}{
		{"link out of the store", func(m string) error { return os.Symlink(outside, m) }, "symbolic link"},
		{"link inside the store", func(m string) error {
			if err := os.WriteFile(filepath.Join(filepath.Dir(m), "MANIFEST"), []byte("data"), 0o600); err != nil {
				return err
			}
			return os.Symlink("MANIFEST", m)
		}, "symbolic link"},
		{"link to /dev/zero", func(m string) error { return os.Symlink("/dev/zero", m) }, "symbolic link"},
		{"FIFO", func(m string) error { return syscall.Mkfifo(m, 0o600) }, "FIFO"},
		{"directory", func(m string) error { return os.Mkdir(m, 0o700) }, "directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "otelrecords.waiting")
			if err := c.make(marker); err != nil {
				t.Skipf("cannot make a %s here: %v", c.name, err)
			}
			before := time.Now().Add(-time.Second)
			done := make(chan error, 1)
			go func() {
				err := turns.Ask(dir, turns.ReaderToken())
				if turns.Asked(dir, turns.WriterToken(), before) {
					err = errors.Join(err, errors.New("Asked read a request from it"))
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), c.kind) {
					t.Fatalf("Ask on a marker that is a %s = %v, want an error naming it as a %s", c.name, err, c.kind)
				}
				if strings.Contains(err.Error(), "Asked read") {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Ask or Asked blocked on a marker that is a %s", c.name)
			}
			if b, err := os.ReadFile(outside); err != nil || string(b) != "12345/1\n" {
				t.Fatalf("the file outside the store was changed: %q, %v", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "MANIFEST")); err == nil && string(b) != "data" {
				t.Fatalf("the file the marker links to was changed: %q", b)
			}
		})
	}
}
