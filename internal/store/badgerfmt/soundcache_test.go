package badgerfmt

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// twoTableStore writes a store of two tables in a directory of its own.
func twoTableStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	for i := range 2 {
		db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte{byte(i)}, []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkedStore returns a store of two tables a check found sound, with
// a cache of the test's own.
func checkedStore(t *testing.T) string {
	t.Helper()
	if !identOf(mustStat(t, t.TempDir())).known() {
		t.Skip("files cannot be told apart here: every check reads every table")
	}
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	dir := twoTableStore(t)
	if found, err := CheckForOpen(dir); err != nil || len(found) != 0 {
		t.Fatalf("CheckForOpen = %v, %v", found, err)
	}
	return dir
}

// What a check found sound outlives the process: a new process (its
// memory forgotten) finds it in the cache, unless the cache file is torn,
// of another version or of another store, or was forgotten everywhere.
func TestSoundOutlivesTheProcess(t *testing.T) {
	dir := checkedStore(t)
	ForgetSound() // as a new process
	if n := soundTableCount(dir); n != 2 {
		t.Fatalf("a new process knows %d tables sound, want the cache's 2", n)
	}
	path, _, ok := soundCacheFile(dir)
	if !ok {
		t.Fatal("no cache path")
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := twoTableStore(t)
	otherPath, _, _ := soundCacheFile(other)
	for name, bad := range map[string][]byte{
		"torn":            good[:len(good)-3],
		"another version": append([]byte("otelrecords sound tables v2\n"), good[len(soundMagic):]...),
		"empty":           nil,
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			ForgetSound()
			if n := len(soundTables(dir)); n != 0 {
				t.Errorf("%d tables known sound from a %s cache file, want 0", n, name)
			}
		})
	}
	t.Run("another store's", func(t *testing.T) {
		// The other store's cache file put where this one's is looked
		// for, as a hash collision would: its path says whose it is.
		if err := os.WriteFile(otherPath, good, 0o600); err != nil {
			t.Fatal(err)
		}
		ForgetSound()
		if n := len(soundTables(other)); n != 0 {
			t.Errorf("%d tables known sound from another store's cache file, want 0", n)
		}
	})
	t.Run("forgotten everywhere", func(t *testing.T) {
		if err := os.WriteFile(path, good, 0o600); err != nil {
			t.Fatal(err)
		}
		ForgetSoundEverywhere(dir)
		if n := len(soundTables(dir)); n != 0 {
			t.Errorf("%d tables known sound after ForgetSoundEverywhere, want 0", n)
		}
	})
}

// A table damaged after an earlier process found it sound is read, and
// found, by the next process's first check: writing it changed its times.
func TestCachedSoundMissesNoDamage(t *testing.T) {
	dir := checkedStore(t)
	tables, _ := filepath.Glob(filepath.Join(dir, "*"+TableFileExt))
	fi := mustStat(t, tables[0])
	f, err := os.OpenFile(tables[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 64), fi.Size()-64); err != nil { // the index's checksum and its length
		t.Fatal(err)
	}
	f.Close()
	// Even with its modification time put back, its change time moved.
	if err := os.Chtimes(tables[0], fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	ForgetSound()
	found, err := CheckForOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].File != tables[0] {
		t.Fatalf("a new process's check found %v, want the damaged %s", found, filepath.Base(tables[0]))
	}
}

// The cache keeps at most maxSoundFiles files, and a cache that cannot
// be written costs nothing but the reading.
func TestSoundCacheBounded(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("OTELRECORDS_CACHE_DIR", cache)
	k := map[soundKey]bool{{ident: fileIdent{dev: 1, ino: 2, size: 3, mtime: 4, ctime: 5}, id: 6}: true}
	for i := range maxSoundFiles + 20 {
		saveSound(fmt.Sprintf("/stores/%d", i), k)
	}
	entries, err := os.ReadDir(filepath.Join(cache, "sound"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > maxSoundFiles {
		t.Errorf("the cache holds %d files, want at most %d", len(entries), maxSoundFiles)
	}
	if got := loadSound(fmt.Sprintf("/stores/%d", maxSoundFiles+19)); len(got) != 1 || !got[soundKey{ident: fileIdent{dev: 1, ino: 2, size: 3, mtime: 4, ctime: 5}, id: 6}] {
		t.Errorf("the newest store's cache reads back as %v", got)
	}

	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTELRECORDS_CACHE_DIR", blocked) // a file: no cache under it
	dir := twoTableStore(t)
	if found, err := CheckForOpen(dir); err != nil || len(found) != 0 {
		t.Fatalf("CheckForOpen without a cache = %v, %v", found, err)
	}
}

// A writer's open changes the MANIFEST and deletes the sealed value logs
// holding only a header, so a check before it remembers neither: opens
// of a store that nothing else changes leave the cache file as it is (no
// write on the open's path), and a table written since is still read,
// remembered and written to the cache. What the cache keeps through all
// this still finds a changed table.
func TestWriterOpenLeavesCacheFile(t *testing.T) {
	dir := checkedStore(t)
	path, _, _ := soundCacheFile(dir)
	writerOpen := func(write bool) {
		t.Helper()
		ForgetSound() // as a new process
		d, entries, err := listDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		found, err := CheckForOpenModeIn(d, entries, ForWrite)
		d.Close()
		if err != nil || len(found) != 0 {
			t.Fatalf("CheckForOpenModeIn = %v, %v", found, err)
		}
		for k := range soundTables(dir) {
			if k.compression == soundManifest || (k.compression == sealedLog && k.ident.size <= logHeaderSize) {
				t.Errorf("a check for a writer remembers %+v, which the writer's open changes", k)
			}
		}
		db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
		if err != nil {
			t.Fatal(err)
		}
		if write {
			if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("new"), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	writerOpen(false) // the first may learn the sealed log the read left
	before := mustStat(t, path)
	for range 3 {
		writerOpen(false)
		if after := mustStat(t, path); !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
			t.Fatalf("a writer's open of an unchanged store wrote the cache file again")
		}
	}

	writerOpen(true)  // its Close writes a third table
	writerOpen(false) // which this check reads and remembers
	ForgetSound()
	if n := soundTableCount(dir); n != 3 {
		t.Fatalf("the cache knows %d tables sound, want the 3 a writer's check found", n)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*"+TableFileExt))
	changeKeepingTime(t, tables[0], -1, []byte("junk"))
	checkFindsChanged(t, dir, tables[0], nil)
}
