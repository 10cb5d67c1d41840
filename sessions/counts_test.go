package sessions_test

import (
	"errors"
	"iter"
	"maps"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// countsStore returns a store of three sessions' records over two kinds,
// with what a reader meets in a real one: a record whose value does not
// decode, records of a session without a row, and keys under the root
// that are not a record's. It returns the counts a reader should give.
func countsStore(t *testing.T) (*sessions.MemStore, map[sessions.SessionID]map[string]int) {
	s := sessions.NewMemStore()
	want := map[sessions.SessionID]map[string]int{}
	add := func(kind string, id sessions.SessionID, n int) {
		for seq := range n {
			putRecord(t, s, kind, id, uint64(seq), sessions.Record{Name: kind})
		}
		if want[id] == nil {
			want[id] = map[string]int{}
		}
		want[id][kind] += n
	}
	for _, id := range []sessions.SessionID{1, 2, 3} {
		putSession(t, s, id)
	}
	add("autotune", 1, 3)
	add("compile", 1, 5)
	add("compile", 2, 2)
	add("autotune", 3, 4)
	add("compile", 9, 2) // no row: its session was pruned while it ran
	// Damaged, but a record by its key: counted.
	put(t, s, testsupport.RecordKey("compile", sessions.Stamp{Session: 2, Seq: 7}), []byte("not cbor"))
	want[2]["compile"]++
	// Not records: a kind not in its canonical form, a short key, no 0x00.
	put(t, s, []byte(keys.Root+"//compile/\x00"+"0123456789abcdef"), []byte{0xa0}) // not canonical
	put(t, s, []byte(keys.Root+"/compile\x00short"), []byte{0xa0})
	put(t, s, []byte(keys.Root+"/stray"), []byte{0xa0})
	return s, want
}

// TestCounts checks that Counts counts every session's records per kind
// by their keys: records whose value does not decode and records of a
// session without a row are counted, keys that are not a record's are not,
// and a session row is not a record.
func TestCounts(t *testing.T) {
	s, want := countsStore(t)
	got, err := sessions.NewRecords(s).Counts()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("Counts = %v, want %v", got, want)
	}
}

// TestCountsReadsKeysOnly checks that Counts asks a store with ScanKeys
// for keys and reads no value, and that on a store without it it counts
// the same through Scan.
func TestCountsReadsKeysOnly(t *testing.T) {
	s, want := countsStore(t)
	for name, store := range map[string]sessions.Store{
		"ScanKeys":  noValues{s},
		"Scan only": scanOnly{s},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := sessions.NewRecords(store).Counts()
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, want, maps.Equal) {
				t.Errorf("Counts = %v, want %v", got, want)
			}
		})
	}
}

// noValues is a store with ScanKeys whose Scan fails: a reader that read a value
// would see the error.
type noValues struct{ *sessions.MemStore }

func (noValues) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		yield(sessions.Entry{}, errors.New("Scan called: a value was read"))
	}
}

// scanOnly is a store without ScanKeys.
type scanOnly struct{ store sessions.Store }

func (s scanOnly) Write(es []sessions.Entry) error { return s.store.Write(es) }
func (s scanOnly) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return s.store.Scan(start, end)
}
func (s scanOnly) DeleteRange(start, end []byte, match func([]byte) bool) (int, error) {
	return s.store.DeleteRange(start, end, match)
}
func (s scanOnly) Close() error { return s.store.Close() }
