package badgerfmt

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSoundTablesRemembered checks what a check remembers: every table of
// a healthy store, none of a store it has not checked, and that a table
// whose times change is read again.
func TestSoundTablesRemembered(t *testing.T) {
	if !identOf(mustStat(t, t.TempDir())).known() {
		t.Skip("files cannot be told apart here: every check reads every table")
	}
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	dir := twoTableStore(t)
	tables, _ := filepath.Glob(filepath.Join(dir, "*"+TableFileExt))
	if len(tables) != 2 {
		t.Fatalf("%d tables, want 2", len(tables))
	}
	if n := len(soundTables(dir)); n != 0 {
		t.Fatalf("%d tables remembered before any check", n)
	}
	if found, err := CheckForOpen(dir); err != nil || len(found) != 0 {
		t.Fatalf("CheckForOpen = %v, %v", found, err)
	}
	if n := len(soundTables(dir)); n != 2 {
		t.Fatalf("%d tables remembered after a check, want 2", n)
	}

	// A table touched is another version of the file: not the one found
	// sound.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(tables[0], later, later); err != nil {
		t.Fatal(err)
	}
	sound := soundTables(dir)
	var touched tableJob
	for _, path := range tables {
		touched = tableJob{path: path, ident: identOf(mustStat(t, path))}
		matched := false
		for k := range sound {
			matched = matched || k.ident == touched.ident
		}
		if want := path != tables[0]; matched != want {
			t.Errorf("%s: remembered %v, want %v", filepath.Base(path), matched, want)
		}
	}

	// CheckAll remembers nothing, and ForgetSoundEverywhere forgets.
	ForgetSoundEverywhere(dir)
	if _, err := CheckAll(dir); err != nil {
		t.Fatal(err)
	}
	if n := len(soundTables(dir)); n != 0 {
		t.Errorf("%d tables remembered after CheckAll, want 0", n)
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
