package badgerfmt_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	_ "github.com/otelrecords/otelrecords/internal/testkit/testsupport" // the sound cache of the tests', not the user's
)

// The stores of these tests are written with Badger itself, shaped as
// badgerstore's are: tables of one open's records each, values of 128 KiB
// or more in the value log, and after a kill, a write-ahead log that
// Badger has not replayed.

// options returns Badger's options with the sizes badgerstore gives the
// files (its options.go): small write-ahead and value logs, values of
// 128 KiB or more in the value log.
func options(dir string) badger.Options {
	return badger.DefaultOptions(dir).WithLogger(nil).
		WithMemTableSize(1 << 20).
		WithValueThreshold(128 << 10).
		WithValueLogFileSize(16 << 20)
}

// key returns a record key as badgerstore's users write them: a
// namespace, 0x00, and a session and a sequence number, big-endian.
func key(session, seq uint64) []byte {
	k := append([]byte("records/v1/autotune"), 0)
	k = binary.BigEndian.AppendUint64(k, session)
	return binary.BigEndian.AppendUint64(k, seq)
}

// build writes a store in dir in opens spells (badgerfmttest.Build), of
// 1,500 entries each (a table each, flushed at Close), and in the first a
// 2 MiB value, which goes to the value log. It returns every entry
// written, by key.
func build(t *testing.T, dir string, opens int, crash bool) map[string][]byte {
	t.Helper()
	written := map[string][]byte{}
	badgerfmttest.Build(t, dir, opens, crash, func(live string, i int) func() error {
		db, err := badger.Open(options(live))
		if err != nil {
			t.Fatal(err)
		}
		var keys [][]byte
		for seq := range 1500 {
			k := key(uint64(i+1), uint64(seq))
			v := fmt.Appendf(nil, "tune matmul %d: %dx%d tiled simd, tried %d", seq, seq, 7*seq, i)
			if i == 0 && seq == 1000 {
				v = bytes.Repeat([]byte{byte(seq)}, 2<<20)
			}
			written[string(k)] = v
			keys = append(keys, k)
		}
		// In batches, as badgerstore writes: a transaction each.
		for b := range slices.Chunk(keys, 250) {
			wb := db.NewWriteBatch()
			for _, k := range b {
				if err := wb.Set(k, written[string(k)]); err != nil {
					t.Fatal(err)
				}
			}
			if err := wb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		return db.Close
	})
	return written
}

// TestCheckFindsDamage damages a store in each way of Damages: the checks
// name the damaged file first, and change nothing. CheckForOpen does not
// read data blocks, as Badger's Open does not; CheckAll does.
func TestCheckFindsDamage(t *testing.T) {
	for _, d := range append(slices.Clone(badgerfmttest.Damages), badgerfmttest.DataBlock) {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "store")
			build(t, dir, 1, d.Crash)
			path := badgerfmttest.FileWith(t, dir, d.File)
			d.Do(t, path)
			before := badgerfmttest.FilesIn(t, dir)

			found, err := badgerfmt.CheckForOpen(dir)
			switch {
			case err != nil:
				t.Fatalf("CheckForOpen: %v", err)
			case d.Name == badgerfmttest.DataBlock.Name:
				if len(found) != 0 {
					t.Errorf("CheckForOpen = %v; it reads no data block", found)
				}
			case len(found) == 0 || found[0].File != path:
				t.Errorf("CheckForOpen = %v, want the damage in %s first", found, path)
			}
			found, err = badgerfmt.CheckAll(dir)
			if err != nil || len(found) == 0 || found[0].File != path {
				t.Fatalf("CheckAll = %v, %v; want the damage in %s first", found, err, path)
			}
			if d.Name == badgerfmttest.DataBlock.Name && !strings.Contains(found[0].Problem, "data block") {
				t.Errorf("CheckAll's problem %q does not say a data block is damaged", found[0].Problem)
			}
			t.Logf("%s: %s: %v", found[0].File, found[0].Problem, found[0].Err)
			if after := badgerfmttest.FilesIn(t, dir); !maps.Equal(before, after) {
				t.Errorf("the check changed the store:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// TestCheckPassesHealthyStores checks that a closed store and what a
// killed writer leaves pass both checks: a torn write is not damage.
func TestCheckPassesHealthyStores(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "killed"}[crash], func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "store")
			build(t, dir, 2, crash)
			for name, check := range map[string]func(string) ([]*badgerfmt.Damage, error){
				"CheckForOpen": badgerfmt.CheckForOpen,
				"CheckAll":     badgerfmt.CheckAll,
			} {
				if found, err := check(dir); err != nil || len(found) > 0 {
					t.Errorf("%s = %v, %v; want no damage", name, found, err)
				}
			}
		})
	}
}

// TestCheckMissingFiles removes the MANIFEST of a store holding tables
// (Badger would start an empty store and delete them), and damages its
// KEYREGISTRY (Badger would read a key that is not there).
func TestCheckMissingFiles(t *testing.T) {
	for _, tc := range []struct {
		file string
		do   func(t testing.TB, path string)
	}{
		{badger.ManifestFilename, func(t testing.TB, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{badger.KeyRegistryFileName, func(t testing.TB, path string) { badgerfmttest.Overwrite(t, path, 16, 12) }},
	} {
		dir := filepath.Join(t.TempDir(), "store")
		build(t, dir, 1, false)
		path := filepath.Join(dir, tc.file)
		tc.do(t, path)
		if found, err := badgerfmt.CheckForOpen(dir); err != nil || len(found) != 1 || found[0].File != path {
			t.Errorf("CheckForOpen = %v, %v; want the damage in %s", found, err, path)
		}
	}
}

// TestSalvage damages a store in each way of Damages and salvages it:
// what Salvage returns was written so, in key order; what it loses it
// accounts for; and a damaged MANIFEST or value log costs what it holds
// and no more.
func TestSalvage(t *testing.T) {
	describe := func(k []byte) string { return fmt.Sprintf("key %q", k) }
	for _, d := range append(slices.Clone(badgerfmttest.Damages), badgerfmttest.DataBlock) {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "store")
			written := build(t, dir, 2, d.Crash)
			path := badgerfmttest.FileWith(t, dir, d.File)
			d.Do(t, path)
			before := badgerfmttest.FilesIn(t, dir)

			s, err := badgerfmt.Salvage(dir, describe)
			if err != nil {
				t.Fatal(err)
			}
			if after := badgerfmttest.FilesIn(t, dir); !maps.Equal(before, after) {
				t.Errorf("Salvage changed the store:\nbefore %v\nafter  %v", before, after)
			}
			if !slices.IsSortedFunc(s.Entries, func(a, b badgerfmt.Entry) int { return bytes.Compare(a.Key, b.Key) }) {
				t.Errorf("entries out of key order")
			}
			for _, e := range s.Entries {
				if w, ok := written[string(e.Key)]; !ok || !bytes.Equal(e.Value, w) {
					t.Fatalf("Salvage returned %q, which was not written so", e.Key)
				}
			}
			lost := len(written) - len(s.Entries)
			t.Logf("kept %d of %d; lost: %v", len(s.Entries), len(written), s.Lost)
			if lost > 0 && len(s.Lost) == 0 {
				t.Errorf("%d entries lost, and Salvage says nothing of it", lost)
			}
			if s.LostEntries > lost {
				t.Errorf("LostEntries %d, yet only %d entries are missing", s.LostEntries, lost)
			}
			// A damage costs a table, a block, a value, or a log's stretch.
			if len(s.Entries) < len(written)/2-1 {
				t.Errorf("kept %d of %d entries", len(s.Entries), len(written))
			}
			switch d.Name {
			case "MANIFEST random bytes", "MANIFEST truncated":
				if lost != 0 {
					t.Errorf("lost %d entries to a damaged MANIFEST; its tables are whole", lost)
				}
			case "vlog random bytes", "vlog truncated":
				if lost != 1 || s.LostEntries != 1 || !strings.Contains(strings.Join(s.Lost, "\n"), describe(key(1, 1000))) {
					t.Errorf("lost %d entries (%d counted: %v) to a damaged value log, want the one value in it, described", lost, s.LostEntries, s.Lost)
				}
			}
		})
	}
}

// TestSalvageDropsExpired writes an entry that has expired, beside one
// that has not, and salvages what a writer killed then leaves: the entries
// are in its write-ahead log only. Badger hides an expired entry, so
// Salvage must not bring it back.
func TestSalvageDropsExpired(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	live := dir + "-live"
	db, err := badger.Open(options(live))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wb := db.NewWriteBatch()
	expired := badger.NewEntry(key(1, 1), []byte("expired"))
	expired.ExpiresAt = 1 // a second into 1970
	for _, e := range []*badger.Entry{badger.NewEntry(key(1, 0), []byte("live")), expired} {
		if err := wb.SetEntry(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	badgerfmttest.CopyDir(t, live, dir)

	s, err := badgerfmt.Salvage(dir, func(k []byte) string { return string(k) })
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Entries) != 1 || !bytes.Equal(s.Entries[0].Key, key(1, 0)) {
		t.Errorf("Salvage = %q, want the live entry alone", s.Entries)
	}
}

// TestCheckForOpenAgainAfterDamage checks a healthy store, which
// CheckForOpen then remembers as sound, damages a table's index, and
// checks again: the damage is found, as on a first check, though the
// table was found sound before.
func TestCheckForOpenAgainAfterDamage(t *testing.T) {
	for _, d := range badgerfmttest.Damages {
		if d.File != badgerfmt.TableFileExt {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "store")
			build(t, dir, 2, false)
			if found, err := badgerfmt.CheckForOpen(dir); err != nil || len(found) != 0 {
				t.Fatalf("CheckForOpen of a healthy store = %v, %v", found, err)
			}
			path := badgerfmttest.FileWith(t, dir, d.File)
			d.Do(t, path)
			found, err := badgerfmt.CheckForOpen(dir)
			if err != nil || len(found) == 0 || found[0].File != path {
				t.Fatalf("CheckForOpen after damage = %v, %v; want the damage in %s", found, err, path)
			}
		})
	}
}
