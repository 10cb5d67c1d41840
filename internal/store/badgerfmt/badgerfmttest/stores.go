package badgerfmttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// BigValueSize is the size of the one value a test store keeps in the
// value log (values from the store's value threshold, 128 KiB, go there).
const BigValueSize = 2 << 20

// Entries returns n record entries of one session, starting at seq
// first, with values like the exporter's.
func Entries(session sessions.SessionID, first, n int) []sessions.Entry {
	out := make([]sessions.Entry, 0, n)
	for i := first; i < first+n; i++ {
		st := sessions.Stamp{Session: session, Seq: uint64(i), Offset: time.Duration(i) * time.Millisecond}
		v, err := sessions.Stamped[sessions.Record]{Stamp: st, Record: sessions.Record{
			Name: fmt.Sprintf("tune matmul %d", i),
			Wall: time.Duration(i) * time.Microsecond,
			Attributes: sessions.Attrs{
				{Key: "autotune.key", Value: sessions.StringValue(fmt.Sprintf("matmul %dx%d tiled simd", i, 7*i))},
				{Key: "tried", Value: sessions.Int64Value(int64(i))},
			},
		}}.MarshalCBOR()
		if err != nil {
			panic(err)
		}
		out = append(out, sessions.Entry{Key: keys.Record("autotune", uint64(st.Session), st.Seq), Value: v})
	}
	return out
}

// BigEntry returns an entry whose value goes to the value log.
func BigEntry(session sessions.SessionID, seq uint64) sessions.Entry {
	v := make([]byte, BigValueSize)
	for i := range v {
		v[i] = byte(i*7 + i>>11)
	}
	return sessions.Entry{Key: keys.Record("blob", uint64(session), seq), Value: v}
}

// BuildStore writes a store in dir the way a writer does, in opens spells
// (one table each, at its Close): 1,500 records per session, and in the
// first one a value kept in the value log. open opens the Store of a
// directory for writing (badgerstore.Open, which this package cannot
// import: badgerstore's own tests import this one). With crash set, the
// last session's store is not closed: the directory is copied while it
// is open, which is what a writer killed at that moment leaves (Build).
// It returns every entry written.
func BuildStore(t testing.TB, dir string, opens int, crash bool, open func(dir string) (sessions.Store, error)) []sessions.Entry {
	t.Helper()
	var all []sessions.Entry
	Build(t, dir, opens, crash, func(live string, i int) func() error {
		s, err := open(live)
		if err != nil {
			t.Fatal(err)
		}
		id := sessions.SessionID(1_700_000_000_000_000_000 + i)
		es := Entries(id, 0, 1000)
		if i == 0 {
			es = append(es, BigEntry(id, 1000))
		}
		es = append(es, Entries(id, 1001, 500)...)
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

// WriteRecords writes n records of one session into s, in batches of
// 10,000 (Entries), and closes it: a store of a million records is about
// 50 MB of tables.
func WriteRecords(t testing.TB, s sessions.Store, n int) {
	t.Helper()
	for i := 0; i < n; i += 10_000 {
		if err := s.Write(Entries(1, i, min(10_000, n-i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
