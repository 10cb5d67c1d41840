package badgerstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/spool"
	"github.com/otelrecords/otelrecords/internal/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// readAll returns every entry of the store in dir.
func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	s, err := Open(dir, WithReadOnly(), WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return testsupport.Entries(t, s)
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
			if after := badgerfmttest.FilesIn(t, rec.Aside); !mapsEqual(before, after) {
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
			kept := 0
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
	if after := badgerfmttest.FilesIn(t, dir); !mapsEqual(before, after) {
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

	s, err := Open(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(s.Dir()); !errors.Is(err, ErrLocked) {
		t.Errorf("Recover of a store held open = %v, want ErrLocked", err)
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
