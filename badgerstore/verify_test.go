package badgerstore

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// bigValueSize is the size of the one value a test store keeps in the
// value log (values from valueThreshold, 1 MiB, go there).
const bigValueSize = 2 << 20

// testEntries returns n record entries of one session, starting at seq
// first, with values like the exporter's.
func testEntries(session sessions.SessionID, first, n int) []sessions.Entry {
	out := make([]sessions.Entry, 0, n)
	for i := first; i < first+n; i++ {
		st := sessions.Stamp{Session: session, Seq: uint64(i), Offset: time.Duration(i) * time.Millisecond}
		v, err := sessions.EncodeRecord(sessions.Stamped[sessions.Record]{Stamp: st, Record: sessions.Record{
			Name: fmt.Sprintf("tune matmul %d", i),
			Wall: time.Duration(i) * time.Microsecond,
			Attributes: sessions.Attrs{
				{Key: "autotune.key", Value: sessions.StringValue(fmt.Sprintf("matmul %dx%d tiled simd", i, 7*i))},
				{Key: "tried", Value: sessions.IntValue(i)},
			},
		}})
		if err != nil {
			panic(err)
		}
		out = append(out, sessions.Entry{Key: sessions.RecordKey("autotune", st), Value: v})
	}
	return out
}

// bigEntry returns an entry whose value goes to the value log.
func bigEntry(session sessions.SessionID, seq uint64) sessions.Entry {
	v := make([]byte, bigValueSize)
	for i := range v {
		v[i] = byte(i*7 + i>>11)
	}
	return sessions.Entry{Key: sessions.RecordKey("blob", sessions.Stamp{Session: session, Seq: seq}), Value: v}
}

// buildStore writes a store in dir the way a writer does, in sessions
// opens (one table each, at its Close): 1,500 records per session, and in
// the first one a value kept in the value log. With crash set, the last
// session's store is not closed: the directory is copied while it is
// open, which is what a writer killed at that moment leaves (Badger's
// logs are memory maps, so the copy sees every acknowledged write), and
// the copy goes to dir. It returns every entry written.
func buildStore(t testing.TB, dir string, opens int, crash bool) []sessions.Entry {
	t.Helper()
	var all []sessions.Entry
	for i := range opens {
		live := dir
		last := i == opens-1
		if crash && last {
			live = dir + "-live"
			if err := os.Rename(dir, live); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
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
		if crash && last {
			copyDir(t, live, dir)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// copyDir copies the regular files of src into a new directory dst,
// keeping runs of zeros as holes, as Badger's own files have them.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		const chunk = 64 << 10
		for off := 0; off < len(b); off += chunk {
			part := b[off:min(off+chunk, len(b))]
			if allZero(part) {
				continue
			}
			if _, err := f.WriteAt(part, int64(off)); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Truncate(int64(len(b))); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// filesIn returns the files of dir with their sizes and hashes.
func filesIn(t testing.TB, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
	}
	return out
}

// fileWith returns the path of the first file in dir whose name ends with
// suffix, preferring the one with the most data (a store has an empty
// value log beside the one holding values).
func fileWith(t testing.TB, dir, suffix string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	best, bestUsed := "", -1
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if u := usedLen(t, path); u > bestUsed {
			best, bestUsed = path, u
		}
	}
	if best == "" {
		t.Fatalf("no *%s file in %s", suffix, dir)
	}
	return best
}

// usedLen returns the length of a file without its trailing zeros: a log
// is sized before it is written, so its written part is shorter.
func usedLen(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return lastNonZero(b) + 1
}

// overwrite writes n random bytes (from a fixed seed) at off.
func overwrite(t testing.TB, path string, off, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, uint64(off)))
	junk := make([]byte, n)
	for i := range junk {
		junk[i] = byte(r.Uint32())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(junk, int64(off)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// tableIndexStart returns where a table's index begins: Badger's table
// ends with the index, its length (4 bytes), a checksum and the
// checksum's length (4 bytes).
func tableIndexStart(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := len(b) - 4
	p -= int(binary.BigEndian.Uint32(b[p:]))
	p -= 4
	return p - int(binary.BigEndian.Uint32(b[p:]))
}

// A damage is one way a file of a store gets damaged.
type damage struct {
	name  string
	crash bool // on a store whose writer was killed (it has a .mem log)
	file  string
	do    func(t testing.TB, path string)
}

// randomIn writes 64 random bytes into the middle of a file's data.
func randomIn(t testing.TB, path string) {
	u := usedLen(t, path)
	n := min(64, u/2)
	overwrite(t, path, u/2-n/2, n)
}

// cutHalf truncates a file to half its data.
func cutHalf(t testing.TB, path string) {
	if err := os.Truncate(path, int64(usedLen(t, path)/2)); err != nil {
		t.Fatal(err)
	}
}

// theDamages are the damages issue 4 asks Open to survive: random bytes
// written into a table, the MANIFEST, a value log and a memtable log, and
// each of them truncated. Random bytes go into the part of a table that
// Badger's Open reads (its index); damage to its data blocks is
// TestDamagedDataBlock's.
var theDamages = []damage{
	{"sst random bytes in the index", false, sstFileExt, func(t testing.TB, path string) {
		start := tableIndexStart(t, path)
		overwrite(t, path, start+(usedLen(t, path)-start)/2-32, 64)
	}},
	{"sst truncated", false, sstFileExt, cutHalf},
	{"MANIFEST random bytes", false, badger.ManifestFilename, randomIn},
	{"MANIFEST truncated", false, badger.ManifestFilename, cutHalf},
	{"vlog random bytes", false, vlogFileExt, randomIn},
	{"vlog truncated", false, vlogFileExt, cutHalf},
	{"mem random bytes", true, memFileExt, randomIn},
	{"mem truncated", true, memFileExt, cutHalf},
}

// TestOpenDamagedStore damages one file of a fresh store in each of the
// ways of theDamages, and checks that Open, read-write and read-only,
// returns an error matching ErrCorrupt that names the file — in this
// process, which survives (before this check, a truncated table killed it
// from inside a Badger goroutine) — and that it changed nothing on disk
// (Badger deletes the tables a MANIFEST cut short no longer lists, and
// truncates a log at its damage).
func TestOpenDamagedStore(t *testing.T) {
	for _, d := range theDamages {
		for _, readOnly := range []bool{false, true} {
			mode := map[bool]string{false: "read-write", true: "read-only"}[readOnly]
			t.Run(d.name+"/"+mode, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "store")
				buildStore(t, dir, 1, d.crash)
				path := fileWith(t, dir, d.file)
				d.do(t, path)
				before := filesIn(t, dir)

				var opts []Option
				if readOnly {
					opts = append(opts, WithReadOnly())
				}
				s, err := Open(dir, append(opts, WithErrorHandler(func(err error) { t.Logf("badger: %v", err) }))...)
				if err == nil {
					s.Close()
					t.Fatalf("Open of a store with %s succeeded", d.name)
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
				if after := filesIn(t, dir); !mapsEqual(before, after) {
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
	path := fileWith(t, dir, sstFileExt)
	overwrite(t, path, tableIndexStart(t, path)/3, 64)

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
	before := filesIn(t, dir)
	_, err := Open(dir, WithErrorHandler(nil))
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != manifest {
		t.Fatalf("Open = %v, want a *CorruptError naming %s", err, manifest)
	}
	if after := filesIn(t, dir); !mapsEqual(before, after) {
		t.Errorf("Open changed the store: before %v, after %v", before, after)
	}
}

// TestDamagedKeyRegistry damages the KEYREGISTRY, which Badger reads at
// Open to find the keys of an encrypted store.
func TestDamagedKeyRegistry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir, 1, false)
	path := filepath.Join(dir, badger.KeyRegistryFileName)
	overwrite(t, path, 16, 12)
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

// TestVerifyLocked checks that Verify does not read a store another Store
// holds open for writing (its files change under a reader), and says so.
func TestVerifyLocked(t *testing.T) {
	s := open(t)
	if _, err := Verify(s.Dir()); !errors.Is(err, ErrLocked) {
		t.Fatalf("Verify of a store held open = %v, want ErrLocked", err)
	}
}

// encodeTestEntry encodes a log entry as Badger does: meta, user meta,
// then key length, value length and expiry as uvarints, key, value, and a
// big-endian CRC-32C of all that.
func encodeTestEntry(key, value []byte) []byte {
	b := []byte{0, 0}
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = binary.AppendUvarint(b, 0)
	b = append(b, key...)
	b = append(b, value...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// TestWalkLogTellsTornFromDamaged builds a log of three entries in a
// zeroed file, as Badger writes one, and checks every way a kill can tear
// the last write (a prefix of it written, zeros after) passes, while
// damage does not: a byte changed in an entry, or the file cut inside one.
func TestWalkLogTellsTornFromDamaged(t *testing.T) {
	var entries [][]byte
	for i := range 3 {
		key := append([]byte(fmt.Sprintf("records/v1/k\x00%016d", i)), 0, 0, 0, 0, 0, 0, 0, byte(i+1))
		entries = append(entries, encodeTestEntry(key, bytes.Repeat([]byte{byte('a' + i)}, 300)))
	}
	log := make([]byte, logHeaderSize)
	for _, e := range entries {
		log = append(log, e...)
	}
	const size = 8 << 10
	whole := func(b []byte) []byte { return append(bytes.Clone(b), make([]byte, size-len(b))...) }

	if err := walkLog(whole(log), size, nil); err != nil {
		t.Fatalf("an intact log: %v", err)
	}
	lastStart := len(log) - len(entries[2])
	for tear := lastStart; tear < len(log); tear++ {
		if err := walkLog(whole(log[:tear]), size, nil); err != nil {
			t.Fatalf("a write torn at byte %d: %v", tear, err)
		}
	}
	for off := logHeaderSize; off < lastStart; off += 7 {
		b := whole(log)
		b[off] ^= 0x5a
		if err := walkLog(b, size, nil); err == nil {
			t.Errorf("byte %d changed: no damage found", off)
		}
	}
	for cut := logHeaderSize + 1; cut < len(log); cut += 13 {
		if err := walkLog(log[:cut], cut, nil); err == nil && !slices.Contains(entryEnds(entries), cut) {
			t.Errorf("file cut at byte %d inside an entry: no damage found", cut)
		}
	}
}

func entryEnds(entries [][]byte) []int {
	ends, off := []int{}, logHeaderSize
	for _, e := range entries {
		off += len(e)
		ends = append(ends, off)
	}
	return ends
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
		for e, err := range s.Scan(sessions.RecordKey("autotune", sessions.Stamp{Session: session}), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(e.Key, []byte(sessions.Namespace("autotune"))) {
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
			if err := checkBeforeOpen(dir, false); err != nil {
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
