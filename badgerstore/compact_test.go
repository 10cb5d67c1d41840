package badgerstore

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// writeRecords writes n records of each of the given sessions, as raw
// entries of about 200 bytes.
func writeRecords(t *testing.T, st *Store, ids []sessions.SessionID, n int) {
	t.Helper()
	value := make([]byte, 200)
	for _, id := range ids {
		var batch []sessions.Entry
		for seq := range n {
			batch = append(batch, sessions.Entry{
				Key:   testsupport.RecordKey("compile", sessions.Stamp{Session: id, Seq: uint64(seq)}),
				Value: value,
			})
		}
		batch = append(batch, sessions.Entry{Key: testsupport.SessionKey(id), Value: []byte{0xa0}})
		if err := st.Write(batch); err != nil {
			t.Fatal(err)
		}
	}
}

func countKeys(t *testing.T, st *Store) int {
	t.Helper()
	n := 0
	for _, err := range st.Scan([]byte(keys.Root), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestCompact deletes most of a store, as a prune does, and compacts it:
// the store shrinks, and what was not deleted is all there.
func TestCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := []sessions.SessionID{1e18, 2e18, 3e18}
	writeRecords(t, st, ids, 5000)
	// Close and reopen, so the records are in tables, as in a store that
	// many processes wrote over time.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Delete the first two sessions: the deletes only add tombstones.
	end := testsupport.RecordKey("compile", sessions.Stamp{Session: ids[2]})
	if n, err := st.DeleteRange(testsupport.RecordKey("compile", sessions.Stamp{}), end, nil); err != nil || n != 10000 {
		t.Fatalf("DeleteRange = %d, %v", n, err)
	}

	before, after, err := st.Compact()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted %d -> %d bytes", before, after)
	if before <= 0 || after >= before/2 {
		t.Errorf("Compact: %d -> %d bytes; want two thirds of the records' space back", before, after)
	}
	if n := countKeys(t, st); n != 5000+len(ids) {
		t.Errorf("%d keys after Compact, want %d", n, 5000+len(ids))
	}

	// Compacting a compact store changes nothing, and costs little.
	b2, a2, err := st.Compact()
	if err != nil || b2 != after || a2 > after {
		t.Errorf("Compact again: %d -> %d, %v; want %d -> at most that", b2, a2, err, after)
	}
}

func TestCompactReadOnlyAndClosed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeRecords(t, st, []sessions.SessionID{1}, 10)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Compact(); !errors.Is(err, sessions.ErrClosed) {
		t.Errorf("Compact after Close: %v, want ErrClosed", err)
	}
	ro, err := Open(dir, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, _, err := ro.Compact(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Compact of a read-only store: %v, want ErrReadOnly", err)
	}
}

// ExampleStore_Compact gives back the space of pruned sessions.
func ExampleStore_Compact() {
	tmp, err := os.MkdirTemp("", "otelrecords-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	st, err := Open(filepath.Join(tmp, "store"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// ... sessions recorded over time ...
	if _, err := sessions.NewRecords(st).Prune(5); err != nil {
		log.Fatal(err)
	}
	before, after, err := st.Compact()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(after <= before)
	// Output: true
}
