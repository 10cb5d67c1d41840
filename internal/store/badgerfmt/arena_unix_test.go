//go:build !windows && !plan9 && !js && !wasip1 && !aix

package badgerfmt

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestArenaMapsSideBySide maps two files into one arena and reads them
// back, and falls back (ok false) once the arena is full.
func TestArenaMapsSideBySide(t *testing.T) {
	dir := t.TempDir()
	page := os.Getpagesize()
	contents := [][]byte{
		bytes.Repeat([]byte("a"), page+10), // two pages
		bytes.Repeat([]byte("b"), 7),       // one page
	}
	var files []*os.File
	for i, c := range contents {
		path := filepath.Join(dir, string(rune('0'+i)))
		if err := os.WriteFile(path, c, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	a := newArena(int64(3 * page))
	if a == nil {
		t.Fatal("newArena: no arena")
	}
	defer a.release()
	for i, f := range files {
		data, ok := a.mapFile(f, int64(len(contents[i])))
		if !ok {
			t.Fatalf("file %d: not mapped", i)
		}
		if !bytes.Equal(data, contents[i]) {
			t.Fatalf("file %d: mapped %q..., want %q...", i, data[:min(8, len(data))], contents[i][:8])
		}
	}
	if _, ok := a.mapFile(files[1], 1); ok {
		t.Fatal("a full arena mapped a file")
	}
	var none *arena
	if _, ok := none.mapFile(files[1], 1); ok {
		t.Fatal("a nil arena mapped a file")
	}
}
