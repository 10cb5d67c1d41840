package sessions_test

import (
	"iter"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// scanCounter counts the value bytes its store's scans have yielded,
// each key's once: a merged read looks at the key after a run and reads it
// again at the next.
type scanCounter struct {
	sessions.Store
	seen  map[string]bool
	bytes int
}

func (s *scanCounter) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		for e, err := range s.Store.Scan(start, end) {
			if !s.seen[string(e.Key)] {
				s.seen[string(e.Key)] = true
				s.bytes += len(e.Value)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// TestInStampOrderHoldsBoundedBytes: a merged read of huge records reads
// ahead a few MiB of them, not a run of a thousand (issue 22: a view of a
// store of 2 MiB values held gigabytes).
func TestInStampOrderHoldsBoundedBytes(t *testing.T) {
	const n, size = 64, 1 << 20
	mem := sessions.NewMemStore()
	huge := strings.Repeat("v", size)
	var entries []sessions.Entry
	for i := range n {
		st := sessions.Stamp{Session: 7, Seq: uint64(i)}
		entries = append(entries, testsupport.RecordEntry(t, "work", st, sessions.Record{
			Name: "r", Attributes: sessions.Attrs{{Key: "payload", Value: sessions.StringValue(huge)}},
		}))
	}
	if err := mem.Write(entries); err != nil {
		t.Fatal(err)
	}
	st := &scanCounter{Store: mem, seen: map[string]bool{}}
	got, consumed, ahead := 0, 0, 0
	for kr, err := range sessions.NewRecords(st).InStampOrder([]string{"work"}) {
		if err != nil {
			t.Fatal(err)
		}
		if kr.Stamp.Seq != uint64(got) {
			t.Fatalf("record %d has seq %d", got, kr.Stamp.Seq)
		}
		got++
		consumed += size
		ahead = max(ahead, st.bytes-consumed)
	}
	if got != n {
		t.Fatalf("read %d records, want %d", got, n)
	}
	// The key and the rest of the value make each record a little over
	// size; 8 MiB is what the merge may hold.
	if limit := 9 << 20; ahead > limit {
		t.Errorf("read %d MiB ahead of the records merged, want at most %d", ahead>>20, limit>>20)
	}
}
