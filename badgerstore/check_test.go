package badgerstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// buildStore writes a store in dir as badgerfmttest.BuildStore does,
// through Open.
func buildStore(t testing.TB, dir string, opens int, crash bool) []sessions.Entry {
	t.Helper()
	return badgerfmttest.BuildStore(t, dir, opens, crash, func(dir string) (sessions.Store, error) {
		return Open(dir, WithErrorHandler(func(err error) { t.Errorf("building the store: %v", err) }))
	})
}

// TestOpenDamagedStore damages one file of a fresh store in each of the
// ways of badgerfmttest.Damages, and checks that Open, read-write and
// read-only, returns an error matching ErrCorrupt that names the file —
// in this process, which survives (before this check, a truncated table
// killed it from inside a Badger goroutine) — and that it changed nothing
// on disk (Badger deletes the tables a MANIFEST cut short no longer lists,
// and truncates a log at its damage).
func TestOpenDamagedStore(t *testing.T) {
	for _, d := range badgerfmttest.Damages {
		for _, readOnly := range []bool{false, true} {
			mode := map[bool]string{false: "read-write", true: "read-only"}[readOnly]
			t.Run(d.Name+"/"+mode, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "store")
				buildStore(t, dir, 1, d.Crash)
				path := badgerfmttest.FileWith(t, dir, d.File)
				d.Do(t, path)
				before := badgerfmttest.FilesIn(t, dir)

				var opts []Option
				if readOnly {
					opts = append(opts, WithReadOnly())
				}
				s, err := Open(dir, append(opts, WithErrorHandler(func(err error) { t.Logf("badger: %v", err) }))...)
				if err == nil {
					s.Close()
					t.Fatalf("Open of a store with %s succeeded", d.Name)
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open = %v, want an error matching ErrCorrupt", err)
				}
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.File != path {
					t.Fatalf("Open = %v, want a *CorruptError naming %s", err, path)
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "records doctor") {
					t.Errorf("message %q does not name %s and the way to recover", err, path)
				}
				t.Logf("%s", err)
				if after := badgerfmttest.FilesIn(t, dir); !mapsEqual(before, after) {
					t.Errorf("Open changed the damaged store:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}
}

// TestMissingManifest removes the MANIFEST of a store holding tables:
// Badger would start an empty store and delete the tables.
func TestMissingManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir, 1, false)
	manifest := filepath.Join(dir, badger.ManifestFilename)
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	before := badgerfmttest.FilesIn(t, dir)
	_, err := Open(dir, WithErrorHandler(nil))
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != manifest {
		t.Fatalf("Open = %v, want a *CorruptError naming %s", err, manifest)
	}
	if after := badgerfmttest.FilesIn(t, dir); !mapsEqual(before, after) {
		t.Errorf("Open changed the store: before %v, after %v", before, after)
	}
}

// TestDamagedKeyRegistry damages the KEYREGISTRY, which Badger reads at
// Open to find the keys of an encrypted store.
func TestDamagedKeyRegistry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir, 1, false)
	path := filepath.Join(dir, badger.KeyRegistryFileName)
	badgerfmttest.Overwrite(t, path, 16, 12)
	_, err := Open(dir, WithErrorHandler(nil))
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != path {
		t.Fatalf("Open = %v, want a *CorruptError naming %s", err, path)
	}
}

// TestEmptyLogsAKillLeft checks a store in which a writer was killed
// between creating a write-ahead log or a value-log file and giving it its
// size (TestKilledWriterPasses met one): the files are empty, Badger takes
// them for ones it has just created and refuses to open the store. A
// read-only Open says which file is in the way and changes nothing; a
// read-write Open removes them, and every entry is there.
func TestEmptyLogsAKillLeft(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "killed"}[crash], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			written := buildStore(t, dir, 2, crash)
			for _, name := range []string{"00050.mem", "000050.vlog"} {
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := Open(dir, WithReadOnly()); err == nil || !strings.Contains(err.Error(), "0050.") || !strings.Contains(err.Error(), "read-write open") {
				t.Fatalf("read-only Open = %v, want an error naming the empty log", err)
			}
			for _, name := range []string{"00050.mem", "000050.vlog"} {
				if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() != 0 {
					t.Fatalf("after a read-only Open, %s: %v, %v; want it left as it was", name, fi, err)
				}
			}
			s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
			if err != nil {
				t.Fatalf("read-write Open over empty logs: %v", err)
			}
			got := testsupport.Entries(t, s)
			for _, e := range written {
				if !bytes.Equal(got[string(e.Key)], e.Value) {
					t.Fatalf("entry %q lost or changed", e.Key)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := len(readAll(t, dir)); got != len(written) {
				t.Fatalf("read-only after: %d entries, want %d", got, len(written))
			}
		})
	}
}

// TestStoreIsAFile checks Open on a path that names a file: an error
// naming it, read-write and read-only, and the file left as it was.
func TestStoreIsAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store")
	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{nil, {WithReadOnly()}} {
		s, err := Open(path, append(opts, WithErrorHandler(nil))...)
		if err == nil {
			s.Close()
			t.Fatal("Open of a file succeeded")
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("Open = %v, does not name %s", err, path)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "mine" {
		t.Errorf("the file changed: %q, %v", b, err)
	}
}

// BenchmarkOpenCheck measures the check on a store of 1,000,000 records
// (about 50 MB of tables): Open's check (checkBeforeOpen), and Open+Close
// with the check, read-only and read-write. Open's
// target is 20 ms for open and close.
//
//	go test -run='^$' -bench=OpenCheck -benchtime=20x ./badgerstore/
func BenchmarkOpenCheck(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "store")
	s, err := Open(dir, WithErrorHandler(nil))
	if err != nil {
		b.Fatal(err)
	}
	badgerfmttest.WriteRecords(b, s, 1_000_000)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := checkBeforeOpen(dir, false, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, ro := range []bool{true, false} {
		b.Run(map[bool]string{true: "open-close-read-only", false: "open-close-read-write"}[ro], func(b *testing.B) {
			opts := []Option{WithErrorHandler(nil)}
			if ro {
				opts = append(opts, WithReadOnly())
			}
			for b.Loop() {
				s, err := Open(dir, opts...)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
