package badgerstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/chunk"
	"github.com/otelrecords/otelrecords/sessions"
)

// collect returns what a scan yields, copied, or fails the test.
func collect(t *testing.T, scan func(yield func(sessions.Entry, error) bool)) []sessions.Entry {
	t.Helper()
	var out []sessions.Entry
	for e, err := range scan {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sessions.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
	}
	return out
}

// badgerEntries counts the entries Badger itself holds, chunks as one.
func badgerEntries(t *testing.T, s *Store) (entries, chunks int) {
	t.Helper()
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			entries++
			if _, _, _, ok := chunk.ParseKey(it.Item().Key()); ok {
				chunks++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries, chunks
}

// sameEntries fails the test when got and want differ, saying where.
func sameEntries(t *testing.T, what string, got, want []sessions.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("%s: entry %d is %q=%q, want %q=%q", what, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
		}
	}
}

// TestChunksReadAsRecords writes records as a kept session's flushes do
// (runs of one kind, a server's interleaved traces, other kinds and
// session rows between), and as odder writers might (the same records
// again in other batches, a record written alone over a chunk's), then
// checks every read against a store in memory given the same writes:
// whole scans, scans of a key alone (random access by seq), ranges from
// and to keys inside chunks, keys alone, and deletes of ranges with and
// without a match, with the counts they return. Badger holds far fewer
// entries than records: the runs became chunks.
func TestChunksReadAsRecords(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store"), WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	model := sessions.NewMemStore()
	rng := rand.New(rand.NewPCG(1, 2))
	rec := func(kind string, session, seq uint64) sessions.Entry {
		v := fmt.Appendf(nil, "%s/%d/%d:", kind, session, seq)
		v = append(v, bytes.Repeat([]byte{byte(seq)}, rng.IntN(300))...)
		return sessions.Entry{Key: keys.Record(kind, session, seq), Value: v}
	}
	write := func(es []sessions.Entry) {
		t.Helper()
		if err := s.Write(es); err != nil {
			t.Fatal(err)
		}
		if err := model.Write(es); err != nil {
			t.Fatal(err)
		}
	}
	var all []sessions.Entry
	for session := uint64(1); session <= 3; session++ {
		write([]sessions.Entry{{Key: keys.Session(session), Value: []byte("row")}})
		seq := uint64(0)
		for range 20 {
			var batch []sessions.Entry
			switch rng.IntN(3) {
			case 0: // a run of one kind
				for range 1 + rng.IntN(400) {
					batch = append(batch, rec("compile", session, seq))
					seq++
				}
			case 1: // kinds taking turns
				for i := range 1 + rng.IntN(100) {
					batch = append(batch, rec([]string{"compile", "cache/get", "tune"}[i%3], session, seq))
					seq++
				}
			case 2: // two traces of a server, the second written first
				var a, b []sessions.Entry
				for i := range 2 + rng.IntN(200) {
					if i%2 == 0 {
						a = append(a, rec("request", session, seq))
					} else {
						b = append(b, rec("request", session, seq))
					}
					seq++
				}
				write(b)
				all = append(all, b...)
				batch = a
			}
			write(batch)
			all = append(all, batch...)
		}
	}
	// The same records again, in other batches, and alone over a chunk's
	// (a spool merged after a write that committed part of its batch):
	// each is read once. A record's value never changes once written.
	write(all[100:700])
	write(all[5:6])
	write(all[:1])

	entries, chunks := badgerEntries(t, s)
	t.Logf("%d records in %d Badger entries, %d of them chunks", len(all), entries, chunks)
	if chunks == 0 || entries > len(all)/4 {
		t.Errorf("%d records in %d Badger entries (%d chunks): the runs were not chunk.Chunked", len(all), entries, chunks)
	}

	check := func(what string, start, end []byte) {
		t.Helper()
		want := collect(t, model.Scan(start, end))
		sameEntries(t, what, collect(t, s.Scan(start, end)), want)
		var gotKeys [][]byte
		for k, err := range s.ScanKeys(start, end) {
			if err != nil {
				t.Fatal(err)
			}
			gotKeys = append(gotKeys, bytes.Clone(k))
		}
		if len(gotKeys) != len(want) {
			t.Fatalf("%s: ScanKeys gave %d keys, want %d", what, len(gotKeys), len(want))
		}
		for i := range want {
			if !bytes.Equal(gotKeys[i], want[i].Key) {
				t.Fatalf("%s: key %d is %q, want %q", what, i, gotKeys[i], want[i].Key)
			}
		}
	}
	check("the whole store", nil, nil)
	for _, e := range all[:300] {
		check(fmt.Sprintf("the record %q alone", e.Key), e.Key, append(bytes.Clone(e.Key), 0))
	}
	keyAt := func() []byte {
		e := all[rng.IntN(len(all))]
		if rng.IntN(4) == 0 {
			return append(bytes.Clone(e.Key), 0) // between two records
		}
		return e.Key
	}
	for range 200 {
		a, b := keyAt(), keyAt()
		if bytes.Compare(a, b) > 0 {
			a, b = b, a
		}
		check(fmt.Sprintf("[%q, %q)", a, b), a, b)
	}
	for _, kind := range []string{"compile", "request"} {
		ns := keys.Namespace(kind)
		check(kind+" of session 2", keys.SessionBound(ns, 2), keys.SessionBound(ns, 3))
	}

	// Deletes: a range inside chunks with a match (the odd seqs), the
	// oldest records of a session up to a seq (as a byte bound trims),
	// and a whole session (as a prune).
	odd := func(k []byte) bool { _, _, seq, err := keys.Parse(k); return err == nil && seq%2 == 1 }
	del := func(what string, start, end []byte, match func([]byte) bool) {
		t.Helper()
		n, err := s.DeleteRange(start, end, match)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := model.DeleteRange(start, end, match)
		if n != m {
			t.Errorf("%s: DeleteRange deleted %d, want %d", what, n, m)
		}
		check("after "+what, nil, nil)
	}
	del("the odd seqs 50 to 900 of compile in session 1", keys.Record("compile", 1, 50), keys.Record("compile", 1, 900), odd)
	del("session 2's compile records below seq 777", keys.Record("compile", 2, 0), keys.Record("compile", 2, 777), keys.Parses)
	for _, kind := range []string{"compile", "cache/get", "tune", "request"} {
		ns := keys.Namespace(kind)
		del("session 3's "+kind, keys.SessionBound(ns, 3), keys.SessionBound(ns, 4), keys.Parses)
	}
	for range 50 {
		a, b := keyAt(), keyAt()
		if bytes.Compare(a, b) > 0 {
			a, b = b, a
		}
		check(fmt.Sprintf("after the deletes, [%q, %q)", a, b), a, b)
	}
}

// A chunk that does not decode is an error of the scan that meets it,
// never a panic, and chunk.Decode refuses what no writer wrote.
func TestDamagedChunkIsAnError(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store"), WithErrorHandler(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := keys.Record("compile", 1, 10)
	bad := sessions.Entry{Key: chunk.Key(first, 12), Value: []byte{chunk.Version, 0xff, 0xff, 0xff}}
	if err := s.Write([]sessions.Entry{bad}); err != nil {
		t.Fatal(err)
	}
	var got error
	for _, err := range s.Scan(nil, nil) {
		got = err
	}
	if got == nil {
		t.Fatal("a scan over a damaged chunk gave no error")
	}
	t.Logf("the error: %v", got)
}
