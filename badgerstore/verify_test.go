package badgerstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// bigValueSize is the size of the one value a test store keeps in the
// value log (values from valueThreshold, 128 KiB, go there).
const bigValueSize = 2 << 20

// testEntries returns n record entries of one session, starting at seq
// first, with values like the exporter's.
func testEntries(session sessions.SessionID, first, n int) []sessions.Entry {
	out := make([]sessions.Entry, 0, n)
	for i := first; i < first+n; i++ {
		st := sessions.Stamp{Session: session, Seq: uint64(i), Offset: time.Duration(i) * time.Millisecond}
		v, err := sessions.Stamped[sessions.Record]{Stamp: st, Record: sessions.Record{
			Name: fmt.Sprintf("tune matmul %d", i),
			Wall: time.Duration(i) * time.Microsecond,
			Attributes: sessions.Attrs{
				{Key: "autotune.key", Value: sessions.StringValue(fmt.Sprintf("matmul %dx%d tiled simd", i, 7*i))},
				{Key: "tried", Value: sessions.IntValue(i)},
			},
		}}.MarshalCBOR()
		if err != nil {
			panic(err)
		}
		out = append(out, sessions.Entry{Key: testsupport.RecordKey("autotune", st), Value: v})
	}
	return out
}

// bigEntry returns an entry whose value goes to the value log.
func bigEntry(session sessions.SessionID, seq uint64) sessions.Entry {
	v := make([]byte, bigValueSize)
	for i := range v {
		v[i] = byte(i*7 + i>>11)
	}
	return sessions.Entry{Key: testsupport.RecordKey("blob", sessions.Stamp{Session: session, Seq: seq}), Value: v}
}

// buildStore writes a store in dir the way a writer does, in sessions
// opens (one table each, at its Close): 1,500 records per session, and in
// the first one a value kept in the value log. With crash set, the last
// session's store is not closed: the directory is copied while it is
// open, which is what a writer killed at that moment leaves (Badger's
// logs are memory maps, so the copy sees every acknowledged write), and
// the copy goes to dir (badgerfmttest.Build). It returns every entry
// written.
func buildStore(t testing.TB, dir string, opens int, crash bool) []sessions.Entry {
	t.Helper()
	var all []sessions.Entry
	badgerfmttest.Build(t, dir, opens, crash, func(live string, i int) func() error {
		s, err := Open(live, WithErrorHandler(func(err error) { t.Errorf("building the store: %v", err) }))
		if err != nil {
			t.Fatal(err)
		}
		id := sessions.SessionID(1_700_000_000_000_000_000 + i)
		es := testEntries(id, 0, 1000)
		if i == 0 {
			es = append(es, bigEntry(id, 1000))
		}
		es = append(es, testEntries(id, 1001, 500)...)
		for j := 0; j < len(es); j += 250 {
			if err := s.Write(es[j:min(j+250, len(es))]); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, es...)
		return s.Close
	})
	return all
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
				found, err := Verify(dir)
				if err != nil || len(found) == 0 || found[0].File != path {
					t.Errorf("Verify = %v, %v; want the damage in %s", found, err, path)
				}
			})
		}
	}
}

// TestDamagedDataBlock damages a data block of a table: Open reads only
// what Badger's Open reads (a table's index and last block), so it opens
// the store, as documented; Verify reads every block, and names the file.
func TestDamagedDataBlock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir, 1, false)
	path := badgerfmttest.FileWith(t, dir, badgerfmttest.DataBlock.File)
	badgerfmttest.DataBlock.Do(t, path)

	s, err := Open(dir, WithReadOnly(), WithErrorHandler(nil))
	if err != nil {
		t.Fatalf("Open = %v; Open does not read data blocks", err)
	}
	s.Close()
	found, err := Verify(dir)
	if err != nil || len(found) != 1 || found[0].File != path || !errors.Is(found[0], ErrCorrupt) {
		t.Fatalf("Verify = %v, %v; want one damaged file, %s", found, err, path)
	}
	if !strings.Contains(found[0].Error(), "data block") {
		t.Errorf("Verify's error %q does not say a data block is damaged", found[0])
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

// TestHealthyStoresPass checks that a clean store and the stores a killed
// writer leaves (copies of a live store) pass Verify, and open with every
// acknowledged entry.
func TestHealthyStoresPass(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "killed"}[crash], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			written := buildStore(t, dir, 2, crash)
			if found, err := Verify(dir); err != nil || len(found) > 0 {
				t.Fatalf("Verify = %v, %v; want no damage", found, err)
			}
			s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := testsupport.Entries(t, s)
			for _, e := range written {
				if !bytes.Equal(got[string(e.Key)], e.Value) {
					t.Fatalf("entry %q lost or changed", e.Key)
				}
			}
		})
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

// TestVerifyLocked checks that Verify does not read a store another Store
// holds open for writing (its files change under a reader), and says so.
func TestVerifyLocked(t *testing.T) {
	s := open(t)
	if _, err := Verify(s.Dir()); !errors.Is(err, ErrLocked) {
		t.Fatalf("Verify of a store held open = %v, want ErrLocked", err)
	}
}

// helperEnv, set in the environment of this test binary, makes
// TestKilledWriterHelper write to the store it names until it is killed.
const helperEnv = "BADGERSTORE_VERIFY_HELPER_DIR"

// TestKilledWriterHelper is not a test: run by TestKilledWriterPasses in a
// child process, it writes batches of entries to a store and prints the
// number of entries acknowledged after each, until it is killed.
func TestKilledWriterHelper(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("a helper process for TestKilledWriterPasses")
	}
	s, err := Open(dir, WithErrorHandler(nil))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	first, _ := strconv.Atoi(os.Getenv("BADGERSTORE_VERIFY_HELPER_FIRST"))
	session := sessions.SessionID(1_700_000_000_000_000_000)
	for n := first; ; n += 200 {
		batch := testEntries(session, n, 200)
		if n%2000 == 0 {
			batch = append(batch, bigEntry(session, uint64(n)+199)) // through the value log too
		}
		if err := s.Write(batch); err != nil {
			fmt.Println("write:", err)
			os.Exit(2)
		}
		fmt.Println(n + 200)
	}
}

// TestKilledWriterPasses kills a writer process (SIGKILL) at random
// moments, eight times on one store, and checks after each kill that what
// the kill left is not taken for damage (torn writes are normal), and
// that every acknowledged entry is there once the store is opened.
func TestKilledWriterPasses(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no SIGKILL")
	}
	dir := filepath.Join(t.TempDir(), "store")
	session := sessions.SessionID(1_700_000_000_000_000_000)
	acked := 0
	for round := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterHelper$")
		cmd.Env = append(os.Environ(), helperEnv+"="+dir, "BADGERSTORE_VERIFY_HELPER_FIRST="+strconv.Itoa(acked))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		// Let it write for a while: at least one acknowledged batch, then
		// a random stretch, so the kill lands anywhere in a write.
		if !lines.Scan() {
			t.Fatalf("round %d: the writer said nothing", round)
		}
		deadline := time.Now().Add(time.Duration(20+rand.IntN(200)) * time.Millisecond)
		last := lines.Text()
		go func() {
			time.Sleep(time.Until(deadline))
			cmd.Process.Signal(syscall.SIGKILL)
		}()
		for lines.Scan() {
			last = lines.Text()
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		n, err := strconv.Atoi(last)
		if err != nil {
			t.Fatalf("round %d: the writer said %q", round, last)
		}
		acked = n

		if found, err := Verify(dir); err != nil || len(found) > 0 {
			t.Fatalf("round %d: Verify after a kill = %v, %v; want no damage", round, found, err)
		}
		s, err := Open(dir, WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
		if err != nil {
			t.Fatalf("round %d: Open after a kill: %v", round, err)
		}
		count := 0
		for e, err := range s.Scan(testsupport.RecordKey("autotune", sessions.Stamp{Session: session}), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(e.Key, []byte(keys.Namespace("autotune"))) {
				count++
			}
		}
		s.Close()
		if count < acked {
			t.Fatalf("round %d: %d entries after the kill, %d acknowledged", round, count, acked)
		}
		acked = count
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
// (about 50 MB of tables): Open's check (checkBeforeOpen), Verify's (every
// block), and Open+Close with the check, read-only and read-write. Open's
// target is 20 ms for open and close.
//
//	go test -run='^$' -bench=OpenCheck -benchtime=20x ./badgerstore/
func BenchmarkOpenCheck(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "store")
	s, err := Open(dir, WithErrorHandler(nil))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 1_000_000; i += 10_000 {
		if err := s.Write(testEntries(1, i, 10_000)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := checkBeforeOpen(dir, false, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if found, err := Verify(dir); err != nil || len(found) > 0 {
				b.Fatal(found, err)
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
