//go:build unix

package turns_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/store/turns"
)

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
