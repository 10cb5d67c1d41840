package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// childEnv, set in the environment of this test binary, makes TestMain
// the doctor process that TestRecoverKilledAtEachStep stops (doctorChild).
const childEnv = "DOCTOR_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "doctor" {
		doctorChild(os.Getenv("DOCTOR_TEST_DIR"), os.Getenv("DOCTOR_TEST_STOP"))
		return
	}
	os.Exit(m.Run())
}

// readAll returns every entry of the store in dir.
func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	return testsupport.EntriesIn(t, func() (sessions.Store, error) {
		return badgerstore.Open(dir, badgerstore.WithReadOnly(), badgerstore.WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	})
}

// buildStore writes a store in dir as badgerfmttest.BuildStore does.
func buildStore(t testing.TB, dir string, opens int, crash bool) []sessions.Entry {
	t.Helper()
	return badgerfmttest.BuildStore(t, dir, opens, crash, func(dir string) (sessions.Store, error) {
		return badgerstore.Open(dir, badgerstore.WithErrorHandler(func(err error) { t.Errorf("building the store: %v", err) }))
	})
}

// TestRecover damages a store in each way of badgerfmttest.Damages, and a
// data block besides, recovers it, and checks that the damaged store was
// moved aside unchanged, that the new store opens and holds only entries
// that were written (byte for byte), and that what was lost is accounted
// for: all but the damage is kept.
func TestRecover(t *testing.T) {
	for _, d := range append(slices.Clone(badgerfmttest.Damages), badgerfmttest.DataBlock) {
		t.Run(d.Name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			// Two opens: two tables, so a lost table is not the whole store.
			written := buildStore(t, dir, 2, d.Crash)
			path := badgerfmttest.FileWith(t, dir, d.File)
			d.Do(t, path)
			before := badgerfmttest.FilesIn(t, dir)

			rec, err := Recover(dir)
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if rec.Aside == "" || len(rec.Damage) == 0 {
				t.Fatalf("Recover found nothing to do: %+v", rec)
			}
			if rec.Damage[0].File != filepath.Join(rec.Aside, filepath.Base(path)) {
				t.Errorf("damage reported in %s, want %s", rec.Damage[0].File, path)
			}
			if after := badgerfmttest.FilesIn(t, rec.Aside); !maps.Equal(before, after) {
				t.Errorf("the damaged store changed when moved aside:\nbefore %v\nafter  %v", before, after)
			}

			got := readAll(t, dir)
			want := map[string][]byte{}
			for _, e := range written {
				want[string(e.Key)] = e.Value
			}
			for k, v := range got {
				if w, ok := want[k]; !ok || !bytes.Equal(v, w) {
					t.Fatalf("the new store holds %q, which was not written so", k)
				}
			}
			kept := rec.Tallies + rec.Importer
			for _, n := range rec.Kept {
				kept += n
			}
			if kept != len(got) {
				t.Errorf("Recovery.Kept counts %d entries, the store holds %d", kept, len(got))
			}
			lost := len(want) - len(got)
			t.Logf("kept %d of %d; lost: %v", len(got), len(want), rec.Lost)
			if lost > 0 && len(rec.Lost) == 0 {
				t.Errorf("%d entries lost, and the Recovery says nothing of it", lost)
			}
			// What a damage may cost: a table (1,501 entries of one open),
			// a block, a value, or a log's stretch; never everything.
			if len(got) < len(want)/2-1 {
				t.Errorf("kept %d of %d entries", len(got), len(want))
			}
			switch d.Name {
			case "MANIFEST random bytes", "MANIFEST truncated":
				if lost != 0 {
					t.Errorf("lost %d entries to a damaged MANIFEST; its tables are whole", lost)
				}
			case "vlog random bytes", "vlog truncated":
				if lost != 1 {
					t.Errorf("lost %d entries to a damaged value log, want the one value in it", lost)
				}
			}
		})
	}
}

// TestRecoverHealthy checks that Recover leaves a healthy store alone.
func TestRecoverHealthy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir, 1, false)
	before := badgerfmttest.FilesIn(t, dir)
	rec, err := Recover(dir)
	if err != nil || rec.Aside != "" || len(rec.Damage) != 0 {
		t.Fatalf("Recover of a healthy store = %+v, %v", rec, err)
	}
	if after := badgerfmttest.FilesIn(t, dir); !maps.Equal(before, after) {
		t.Errorf("Recover changed a healthy store")
	}
}

// TestRecoverKeepsSpoolAndRefusesBusyStore checks that the spool goes to
// the new store, and that a store held open is not touched.
func TestRecoverKeepsSpoolAndRefusesBusyStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir, 1, false)
	spooled := []sessions.Entry{{Key: []byte("records/v1/spooled\x00aaaaaaaabbbbbbbb"), Value: []byte("v")}}
	if err := spool.Write(dir, spooled); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, badger.ManifestFilename), 12); err != nil {
		t.Fatal(err)
	}

	s, err := badgerstore.Open(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(s.Dir()); !errors.Is(err, badgerstore.ErrLocked) {
		t.Errorf("Recover of a store held open = %v, want badgerstore.ErrLocked", err)
	}
	s.Close()

	rec, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Spool {
		t.Errorf("the spool was not carried over")
	}
	names, err := os.ReadDir(spool.Dir(dir))
	if err != nil || len(names) != 1 || !strings.HasSuffix(names[0].Name(), ".cbor") {
		t.Errorf("spool of the new store: %v, %v", names, err)
	}
}

// doctorChild is the helper process of TestRecoverKilledAtEachStep: it
// recovers the store in dir and exits, without a deferred call or a
// cleanup, right after the step named stop, as a kill would stop it.
func doctorChild(dir, stop string) {
	doctorStep = func(step string) {
		if step == stop {
			os.Exit(3)
		}
	}
	if _, err := Recover(dir); err != nil {
		fmt.Println("recover:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// damagedStore builds a store of two tables in dir (3,001 entries), with a
// spool file, and cuts its MANIFEST short, which loses nothing to the
// doctor. It returns what a reader should find after recovery.
func damagedStore(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	for _, e := range buildStore(t, dir, 2, false) {
		want[string(e.Key)] = e.Value
	}
	spooled := sessions.Entry{Key: []byte("records/v1/spooled\x00aaaaaaaabbbbbbbb"), Value: []byte("v")}
	if err := spool.Write(dir, []sessions.Entry{spooled}); err != nil {
		t.Fatal(err)
	}
	want[string(spooled.Key)] = spooled.Value
	if err := os.Truncate(filepath.Join(dir, badger.ManifestFilename), 12); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestRecoverKilledAtEachStep stops a doctor process after each step that
// changes the disk, as a kill would. At each stop the store's directory
// is the damaged store, or the recovered one, or missing with a journal
// that Open reports, naming where the records are (and a writer creates
// no empty store there); and a second Recover finishes the job: the
// recovered store in place with every record, the damaged store aside
// unchanged, nothing left over. Before, a doctor killed after moving the
// store aside left no store, or an empty one a later doctor called
// healthy, with nothing pointing to the records.
func TestRecoverKilledAtEachStep(t *testing.T) {
	for _, stop := range []string{"built", "journal", "aside", "swap"} {
		t.Run(stop, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			want := damagedStore(t, dir)
			damaged := badgerfmttest.FilesIn(t, dir)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), childEnv+"=doctor", "DOCTOR_TEST_DIR="+dir, "DOCTOR_TEST_STOP="+stop)
			out, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 3 {
				t.Fatalf("doctor process: %v, exit %d, %s; want it stopped after %q", err, code, out, stop)
			}

			journal := dir + ".doctor"
			_, statErr := os.Lstat(dir)
			switch {
			case errors.Is(statErr, fs.ErrNotExist):
				// Missing: the journal says where the records are, and no
				// one makes an empty store here meanwhile.
				for _, opts := range [][]badgerstore.Option{nil, {badgerstore.WithReadOnly()}} {
					_, err := badgerstore.Open(dir, opts...)
					if !errors.Is(err, badgerstore.ErrRecoveryInterrupted) || !strings.Contains(err.Error(), dir+".damaged-") ||
						!strings.Contains(err.Error(), dir+".doctor-new") || !strings.Contains(err.Error(), "records doctor --dir "+dir) {
						t.Errorf("badgerstore.Open(%v) of a store missing mid-doctor = %v; want badgerstore.ErrRecoveryInterrupted naming where the records are", opts, err)
					}
				}
				if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a read-write badgerstore.Open made a directory where the store will go")
				}
				// A writer that found the store busy spools at its
				// deadline, making the directory: the doctor keeps those
				// records too.
				late := sessions.Entry{Key: []byte("records/v1/late\x00aaaaaaaabbbbbbbb"), Value: []byte("late")}
				if err := spool.Write(dir, []sessions.Entry{late}); err != nil {
					t.Fatal(err)
				}
				want[string(late.Key)] = late.Value
			case badgerfmttest.FilesIn(t, dir)["MANIFEST"] == damaged["MANIFEST"]:
				// The damaged store, unchanged.
				if got := badgerfmttest.FilesIn(t, dir); !maps.Equal(got, damaged) {
					t.Errorf("the damaged store changed before it was moved")
				}
			default:
				// The recovered store, whole.
				if got := readAll(t, dir); len(got) != len(want)-1 {
					t.Errorf("the store in place holds %d entries, want %d", len(got), len(want)-1)
				}
				if _, err := os.Stat(journal); err != nil {
					t.Errorf("the journal is gone before the run ended: %v", err)
				}
			}

			rec, err := Recover(dir)
			if err != nil {
				t.Fatalf("second Recover: %v", err)
			}
			t.Logf("second Recover: resumed %v, aside %s, kept %v", rec.Resumed, rec.Aside, rec.Kept)
			st, err := badgerstore.OpenWait(context.Background(), dir, nil, badgerstore.WithReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]byte{}
			for e, err := range st.Scan(nil, nil) {
				if err != nil {
					t.Fatal(err)
				}
				got[string(e.Key)] = bytes.Clone(e.Value)
			}
			st.Close()
			if len(got) != len(want) {
				t.Errorf("after the second Recover the store holds %d entries, want %d (every record, and the spooled one)", len(got), len(want))
			}
			for k, v := range got {
				if !bytes.Equal(want[k], v) {
					t.Errorf("entry %q: %d bytes, not what was written", k, len(v))
					break
				}
			}
			asides, _ := filepath.Glob(dir + ".damaged-*")
			if len(asides) != 1 || rec.Aside != asides[0] {
				t.Fatalf("damaged stores aside: %v (Recover says %s), want one", asides, rec.Aside)
			}
			if got := badgerfmttest.FilesIn(t, asides[0]); !maps.Equal(got, damaged) {
				t.Errorf("the damaged store aside is not the store as it was")
			}
			if left, _ := filepath.Glob(dir + ".doctor*"); len(left) != 0 {
				t.Errorf("left over: %v", left)
			}
		})
	}
}

// TestRecoverThroughALink recovers a store reached through a link: the
// directory the link points to is recovered, and the link stays a link to
// it. Before, the doctor renamed the link aside and made a real directory
// in its place.
func TestRecoverThroughALink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	want := damagedStore(t, dir)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	rec, err := Recover(link)
	if err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(link); err != nil || target != dir {
		t.Fatalf("the link is now %q, %v; want a link to %s", target, err, dir)
	}
	if filepath.Dir(rec.Aside) != filepath.Dir(dir) {
		t.Errorf("the damaged store went to %s, want beside %s", rec.Aside, dir)
	}
	if got := readAll(t, dir); len(got) != len(want)-1 {
		t.Errorf("the recovered store holds %d entries, want %d", len(got), len(want)-1)
	}
}

// TestRecoverCountsTalliesAndImporterEntries checks that a store's own
// entries other than records and session rows, its tallies and an
// Importer's bookkeeping, are counted as such, not as keys otelrecords
// does not know.
func TestRecoverCountsTalliesAndImporterEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write([]sessions.Entry{
		{Key: keys.Session(7), Value: []byte{0xa0}},
		{Key: keys.Tally(7, 1), Value: []byte{0xa0}},
		{Key: keys.Tally(7, 2), Value: []byte{0xa0}},
		{Key: keys.ImportSender(7), Value: []byte{0xa0}},
		{Key: []byte("elsewhere/key"), Value: []byte("v")},
	})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 12); err != nil {
		t.Fatal(err)
	}
	rec, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Tallies != 2 || rec.Importer != 1 || !maps.Equal(rec.Kept, map[string]int{"sessions": 1, "": 1}) {
		t.Errorf("Recover counted tallies %d, importer entries %d, kept %v; want 2, 1 and a session row and an unknown key",
			rec.Tallies, rec.Importer, rec.Kept)
	}
}
