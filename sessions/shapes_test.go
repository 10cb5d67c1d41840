package sessions_test

import (
	"cmp"
	"flag"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// Hostile shapes: a store of legal keys and values, shaped to make a
// reader's work grow faster than the store. Each test runs a size that
// shows the difference in a second or so; -long runs the sizes
// RELIABILITY.md reports:
//
//	go test -run 'Shape' -v -long ./sessions/
var long = flag.Bool("long", false, "run the hostile-shape tests at the sizes RELIABILITY.md reports")

// openScans is a Store that counts the scans open at once.
type openScans struct {
	*sessions.MemStore
	open, most atomic.Int64
	scans      atomic.Int64
}

func (s *openScans) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		n := s.open.Add(1)
		defer s.open.Add(-1)
		s.scans.Add(1)
		for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
		}
		for e, err := range s.MemStore.Scan(start, end) {
			if !yield(e, err) {
				return
			}
		}
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// manyKinds returns a store of n kinds of one record each, in one
// session, stamped in the reverse of the kinds' order: the shape that made
// InStampOrder open a read per kind. It returns the store's size in bytes.
func manyKinds(t testing.TB, n int) (*sessions.MemStore, int) {
	s := sessions.NewMemStore()
	size := 0
	entries := make([]sessions.Entry, 0, 1024)
	for i := range n {
		e := testsupport.RecordEntry(t, fmt.Sprintf("k%06d", i), sessions.Stamp{Session: 1, Seq: uint64(n - i)}, sessions.Record{Name: "x"})
		size += len(e.Key) + len(e.Value)
		if entries = append(entries, e); len(entries) == cap(entries) {
			if err := s.Write(entries); err != nil {
				t.Fatal(err)
			}
			entries = entries[:0]
		}
	}
	if err := s.Write(entries); err != nil {
		t.Fatal(err)
	}
	return s, size
}

// TestShapeManyKindsMerge reads a store of many kinds of one record each
// in stamp order. Before, InStampOrder held an open read (a pulled
// iterator, a coroutine) per kind: 100,000 at once, 1.3 GB to dump a
// store of a few MB. Now it holds one open read at a time, between yields
// none, and allocates in proportion to the store.
func TestShapeManyKindsMerge(t *testing.T) {
	n := 5_000
	if *long {
		n = 100_000
	}
	mem, size := manyKinds(t, n)
	s := &openScans{MemStore: mem}
	r := sessions.NewRecords(s)
	kinds, err := r.Kinds()
	if err != nil || len(kinds) != n {
		t.Fatalf("Kinds: %d, %v", len(kinds), err)
	}
	s.scans.Store(0)
	count := 0
	var prev uint64
	bytes := allocated(func() {
		for kr, err := range r.InStampOrder(kinds) {
			if err != nil {
				t.Fatal(err)
			}
			if kr.Stamp.Seq <= prev {
				t.Fatalf("seq %d after %d", kr.Stamp.Seq, prev)
			}
			prev = kr.Stamp.Seq
			if s.open.Load() != 0 {
				t.Fatal("a read of the store is open while InStampOrder yields")
			}
			count++
		}
	})
	t.Logf("%d kinds of one record (%d bytes stored): %d scans, at most %d open at once, %d bytes allocated (%.1f per byte stored)",
		n, size, s.scans.Load(), s.most.Load(), bytes, float64(bytes)/float64(size))
	if count != n {
		t.Fatalf("read %d records, want %d", count, n)
	}
	if most := s.most.Load(); most > 1 {
		t.Errorf("%d reads of the store open at once, want 1", most)
	}
	if scans := s.scans.Load(); scans > int64(n) {
		t.Errorf("%d scans for %d kinds of one record, want one a kind", scans, n)
	}
	if bytes > uint64(64*size) {
		t.Errorf("allocated %d bytes to merge a store of %d bytes", bytes, size)
	}
}

// TestShapeManyKindsListed lists the kinds of a store of many kinds.
// Before, every MemStore scan copied the rest of the store up front, and
// Kinds' seek per kind made it quadratic: 5,000 kinds allocated 600 MB.
func TestShapeManyKindsListed(t *testing.T) {
	n := 5_000
	if *long {
		n = 100_000
	}
	s, size := manyKinds(t, n)
	r := sessions.NewRecords(s)
	var kinds []string
	bytes := allocated(func() {
		var err error
		if kinds, err = r.Kinds(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("Kinds of %d kinds (%d bytes stored): %d bytes allocated (%.1f per byte stored)", n, size, bytes, float64(bytes)/float64(size))
	if len(kinds) != n {
		t.Fatalf("%d kinds, want %d", len(kinds), n)
	}
	if bytes > uint64(16*size) {
		t.Errorf("Kinds allocated %d bytes for a store of %d bytes", bytes, size)
	}
}

// TestMergeRunsAcrossRefills merges kinds long enough to be read in many
// runs, with values that do not decode at the ends of runs, and checks
// the merge against a sort: every record once, in stamp order, every bad
// value counted once.
func TestMergeRunsAcrossRefills(t *testing.T) {
	s := sessions.NewMemStore()
	rng := rand.New(rand.NewPCG(1, 2))
	type at struct {
		session sessions.SessionID
		seq     uint64
		kind    string
	}
	var want []at
	bad := 0
	seq := map[sessions.SessionID]uint64{}
	n := 20_000
	if raceEnabled {
		n = 4_000
	}
	for range n {
		id := sessions.SessionID(1 + rng.IntN(3))
		kind := fmt.Sprintf("k%d", rng.IntN(5))
		if rng.IntN(7) == 0 {
			kind = "long"
		}
		seq[id]++
		st := sessions.Stamp{Session: id, Seq: seq[id]}
		if rng.IntN(50) == 0 {
			put(t, s, testsupport.RecordKey(kind, st), []byte("not cbor"))
			bad++
			continue
		}
		putRecord(t, s, kind, id, st.Seq, sessions.Record{Name: kind})
		want = append(want, at{id, st.Seq, kind})
	}
	slices.SortFunc(want, func(a, b at) int {
		return cmp.Or(cmp.Compare(a.session, b.session), cmp.Compare(a.seq, b.seq))
	})
	r := sessions.NewRecords(s)
	var got []at
	for kr, err := range r.InStampOrder(nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, at{kr.Stamp.Session, kr.Stamp.Seq, kr.Kind})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merged %d records, want %d (first: %v, want %v)", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
	if r.Skipped() != int64(bad) {
		t.Fatalf("skipped %d, want %d", r.Skipped(), bad)
	}
	// Stopping early stops cleanly.
	for range r.InStampOrder(nil) {
		break
	}
}
