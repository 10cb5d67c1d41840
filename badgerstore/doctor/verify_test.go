package doctor

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

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestVerifyFindsEachDamage damages one file of a fresh store in each of
// the ways of badgerfmttest.Damages (those badgerstore's
// TestOpenDamagedStore makes Open refuse), and checks that Verify names
// the damaged file first.
func TestVerifyFindsEachDamage(t *testing.T) {
	for _, d := range badgerfmttest.Damages {
		t.Run(d.Name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			buildStore(t, dir, 1, d.Crash)
			path := badgerfmttest.FileWith(t, dir, d.File)
			d.Do(t, path)
			found, err := Verify(dir)
			if err != nil || len(found) == 0 || found[0].File != path {
				t.Errorf("Verify = %v, %v; want the damage in %s", found, err, path)
			}
		})
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

	s, err := badgerstore.Open(dir, badgerstore.WithReadOnly(), badgerstore.WithErrorHandler(nil))
	if err != nil {
		t.Fatalf("badgerstore.Open = %v; badgerstore.Open does not read data blocks", err)
	}
	s.Close()
	found, err := Verify(dir)
	if err != nil || len(found) != 1 || found[0].File != path || !errors.Is(found[0], badgerstore.ErrCorrupt) {
		t.Fatalf("Verify = %v, %v; want one damaged file, %s", found, err, path)
	}
	if !strings.Contains(found[0].Error(), "data block") {
		t.Errorf("Verify's error %q does not say a data block is damaged", found[0])
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
			s, err := badgerstore.Open(dir, badgerstore.WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
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
	s, err := badgerstore.Open(filepath.Join(t.TempDir(), "store"), badgerstore.WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Verify(s.Dir()); !errors.Is(err, badgerstore.ErrLocked) {
		t.Fatalf("Verify of a store held open = %v, want badgerstore.ErrLocked", err)
	}
}

// helperEnv, set in the environment of this test binary, makes
// TestKilledWriterHelper write to the store it names until it is killed.
const helperEnv = "DOCTOR_VERIFY_HELPER_DIR"

// TestKilledWriterHelper is not a test: run by TestKilledWriterPasses in a
// child process, it writes batches of entries to a store and prints the
// number of entries acknowledged after each, until it is killed.
func TestKilledWriterHelper(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("a helper process for TestKilledWriterPasses")
	}
	s, err := badgerstore.Open(dir, badgerstore.WithErrorHandler(nil))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	first, _ := strconv.Atoi(os.Getenv("DOCTOR_VERIFY_HELPER_FIRST"))
	session := sessions.SessionID(1_700_000_000_000_000_000)
	for n := first; ; n += 200 {
		batch := badgerfmttest.Entries(session, n, 200)
		if n%2000 == 0 {
			batch = append(batch, badgerfmttest.BigEntry(session, uint64(n)+199)) // through the value log too
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
		cmd.Env = append(os.Environ(), helperEnv+"="+dir, "DOCTOR_VERIFY_HELPER_FIRST="+strconv.Itoa(acked))
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
		s, err := badgerstore.Open(dir, badgerstore.WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
		if err != nil {
			t.Fatalf("round %d: badgerstore.Open after a kill: %v", round, err)
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

// BenchmarkVerify measures Verify, which reads every block, on a store of
// 1,000,000 records (about 50 MB of tables); badgerstore's
// BenchmarkOpenCheck measures Open's check on the same store.
//
//	go test -run='^$' -bench=Verify -benchtime=20x ./badgerstore/doctor/
func BenchmarkVerify(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "store")
	s, err := badgerstore.Open(dir, badgerstore.WithErrorHandler(nil))
	if err != nil {
		b.Fatal(err)
	}
	badgerfmttest.WriteRecords(b, s, 1_000_000)
	for b.Loop() {
		if found, err := Verify(dir); err != nil || len(found) > 0 {
			b.Fatal(found, err)
		}
	}
}
