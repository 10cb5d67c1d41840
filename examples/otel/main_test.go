package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirSize sums the sizes of the files under dir.
func dirSize(t *testing.T, dir string) (n int64) {
	t.Helper()
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func TestColdThenWarm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var cold bytes.Buffer
	if err := run([]string{"-dir", dir}, &cold); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cold.String(), "cold run: 7 changes, session kept with 23 records") {
		t.Fatalf("first run:\n%s", cold.String())
	}
	for _, want := range []string{"tune matmul/f16/128x128", "compile reduce_tree", "autotune records, typed:", "example build"} {
		if !strings.Contains(cold.String(), want) {
			t.Errorf("first run's output lacks %q", want)
		}
	}
	// The warm run changes nothing: it opens the store only to read it.
	before := dirSize(t, dir)
	var warm bytes.Buffer
	if err := run([]string{"-dir", dir}, &warm); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(warm.String(), "warm run: everything was cached; nothing written") {
		t.Fatalf("second run:\n%s", warm.String())
	}
	if strings.Count(warm.String(), "example build") != 1 {
		t.Fatalf("the warm run added a session:\n%s", warm.String())
	}
	if after := dirSize(t, dir); after != before {
		t.Fatalf("the warm run changed the store: %d -> %d bytes", before, after)
	}
	var reset bytes.Buffer
	if err := run([]string{"-dir", dir, "-reset"}, &reset); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("-reset left the store")
	}
}
