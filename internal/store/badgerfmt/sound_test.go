package badgerfmt

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
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
	if n := soundTableCount(dir); n != 0 {
		t.Fatalf("%d tables remembered before any check", n)
	}
	if found, err := CheckForOpen(dir); err != nil || len(found) != 0 {
		t.Fatalf("CheckForOpen = %v, %v", found, err)
	}
	if n := soundTableCount(dir); n != 2 {
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
		touched = tableJob{dir: filepath.Dir(path), name: filepath.Base(path), ident: identOf(mustStat(t, path))}
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
		t.Errorf("%d files remembered after CheckAll, want 0", n)
	}
}

// soundTableCount returns how many tables (not sealed logs) are known
// sound in the store in dir.
func soundTableCount(dir string) int {
	n := 0
	for k := range soundTables(dir) {
		if k.compression != sealedLog && k.compression != soundManifest {
			n++
		}
	}
	return n
}

// A sealed value log is read once and then known by its file's identity;
// the newest never is. A sealed log changed after a check found it sound
// (damaged, its modification time put back) is read again, by the same
// process and by a new one, and its damage found.
func TestSealedLogCheckedAgainWhenChanged(t *testing.T) {
	if !identOf(mustStat(t, t.TempDir())).known() {
		t.Skip("files cannot be told apart here: every check reads every log")
	}
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "store")
	opts := badger.DefaultOptions(dir).WithLogger(nil).WithValueThreshold(1 << 10)
	for i := range 2 { // the second open seals the first open's value log
		db, err := badger.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(txn *badger.Txn) error {
			return txn.Set([]byte{byte(i)}, bytes.Repeat([]byte{'v'}, 4<<10))
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*"+ValueLogFileExt))
	sort.Strings(vlogs)
	if len(vlogs) < 2 || mustStat(t, vlogs[0]).Size() < 4<<10 {
		t.Fatalf("value logs %v: want a sealed one holding a value", vlogs)
	}
	sealed, newest := vlogs[0], vlogs[len(vlogs)-1]
	if found, err := CheckForOpen(dir); err != nil || len(found) != 0 {
		t.Fatalf("CheckForOpen = %v, %v", found, err)
	}
	remembered := func(path string) bool {
		id := identOf(mustStat(t, path))
		for k := range soundTables(dir) {
			if k.ident == id && k.compression == sealedLog {
				return true
			}
		}
		return false
	}
	if !remembered(sealed) {
		t.Errorf("the sealed %s is not remembered sound", filepath.Base(sealed))
	}
	if remembered(newest) {
		t.Errorf("the newest log %s is remembered sound; Badger writes to it", filepath.Base(newest))
	}

	// One byte of the value changed.
	changeKeepingTime(t, sealed, logHeaderSize+64, []byte{'w'})
	checkFindsChanged(t, dir, sealed, func(process string) {
		if remembered(sealed) {
			t.Errorf("%s remembers the damaged %s sound", process, filepath.Base(sealed))
		}
	})
}

// changeKeepingTime writes b at off in the file at path (appends it when
// off is negative), and puts its modification time back: only its change
// time tells.
func changeKeepingTime(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	fi := mustStat(t, path)
	if off < 0 {
		off = fi.Size()
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// checkFindsChanged checks the store in dir in this process, then as a
// new process, and wants the damage of changed found each time; then
// calls after, if not nil, with which.
func checkFindsChanged(t *testing.T, dir, changed string, after func(process string)) {
	t.Helper()
	for _, process := range []string{"the same process", "a new process"} {
		if process == "a new process" {
			ForgetSound()
		}
		found, err := CheckForOpen(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 || found[0].File != changed {
			t.Errorf("%s's check found %v, want the changed %s", process, found, filepath.Base(changed))
		}
		if after != nil {
			after(process)
		}
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

// A MANIFEST found sound with its tables is not replayed by the next
// check while it is the same file unchanged; its tables are still stat-ed,
// and one missing is found. A MANIFEST changed since (damaged, its
// modification time put back) is replayed again, and its damage found.
func TestKnownManifestReplayedWhenChanged(t *testing.T) {
	dir := checkedStore(t)
	manifest := filepath.Join(dir, badger.ManifestFilename)
	known := func() bool {
		id := identOf(mustStat(t, manifest))
		return soundTables(dir)[soundKey{ident: id, compression: soundManifest}]
	}
	if !known() {
		t.Fatal("the MANIFEST of a sound store is not remembered")
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*"+TableFileExt))
	aside := filepath.Join(t.TempDir(), "aside")
	if err := os.Rename(tables[0], aside); err != nil {
		t.Fatal(err)
	}
	ForgetSound()
	found, err := CheckForOpen(dir)
	if err != nil || len(found) != 1 || found[0].File != tables[0] {
		t.Fatalf("with a table gone, the check found %v, %v; want %s missing", found, err, filepath.Base(tables[0]))
	}
	if known() {
		t.Error("the MANIFEST is remembered sound beside a missing table")
	}
	if err := os.Rename(aside, tables[0]); err != nil {
		t.Fatal(err)
	}
	if found, err := CheckForOpen(dir); err != nil || len(found) != 0 || !known() {
		t.Fatalf("the store restored: check found %v, %v; MANIFEST remembered %v", found, err, known())
	}

	changeKeepingTime(t, manifest, -1, []byte{0, 0, 0}) // a torn entry
	checkFindsChanged(t, dir, manifest, nil)
}

// tableName names a table's file as Badger does.
func TestTableName(t *testing.T) {
	for _, id := range []uint64{0, 1, 42, 999999, 1000000, 123456789012} {
		if got, want := tableName(id), table.IDToFilename(id); got != want {
			t.Errorf("tableName(%d) = %q, want Badger's %q", id, got, want)
		}
	}
}
