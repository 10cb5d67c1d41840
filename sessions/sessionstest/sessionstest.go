// Package sessionstest checks that a sessions.Store behaves as the retention
// rules and the Records reader need, as testing/slogtest does for slog
// handlers: any Store, ours or yours, runs the same suite.
package sessionstest

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"slices"
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// TestStore runs the conformance suite against stores made by newStore,
// which must return a new, empty, open store for each call (closing it is
// the suite's job, through Close, and also t.Cleanup's if newStore
// registers one).
func TestStore(t *testing.T, newStore func(t *testing.T) sessions.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s sessions.Store)
	}{
		{"WriteScanOrder", testWriteScanOrder},
		{"Replace", testReplace},
		{"ScanBounds", testScanBounds},
		{"ScanStopsEarly", testScanStopsEarly},
		{"ScanKeys", testScanKeys},
		{"DeleteRange", testDeleteRange},
		{"DeleteMatching", testDeleteMatching},
		{"DeleteWhileScanning", testDeleteWhileScanning},
		{"EmptyValue", testEmptyValue},
		{"WriteDoesNotRetain", testWriteDoesNotRetain},
		{"LargeBatch", testLargeBatch},
		{"Close", testClose},
		{"Records", testRecords},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			defer s.Close()
			tc.run(t, s)
		})
	}
}

func scanAll(t *testing.T, s sessions.Store, start, end []byte) []sessions.Entry {
	t.Helper()
	var out []sessions.Entry
	for e, err := range s.Scan(start, end) {
		if err != nil {
			t.Fatalf("Scan(%q, %q): %v", start, end, err)
		}
		out = append(out, sessions.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
	}
	return out
}

func keys(es []sessions.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Key)
	}
	return out
}

func write(t *testing.T, s sessions.Store, kv ...string) {
	t.Helper()
	var es []sessions.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		es = append(es, sessions.Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	if err := s.Write(es); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func testWriteScanOrder(t *testing.T, s sessions.Store) {
	write(t, s, "b", "2", "a\x00\xff", "1", "a", "0", "c\x00", "3", "a\x00", "x")
	got := keys(scanAll(t, s, nil, nil))
	want := []string{"a", "a\x00", "a\x00\xff", "b", "c\x00"}
	if !slices.Equal(got, want) {
		t.Fatalf("Scan order = %q, want byte order %q", got, want)
	}
}

func testReplace(t *testing.T, s sessions.Store) {
	write(t, s, "k", "old")
	write(t, s, "k", "new")
	got := scanAll(t, s, nil, nil)
	if len(got) != 1 || string(got[0].Value) != "new" {
		t.Fatalf("after two writes of one key, Scan = %q, want one entry k=new", got)
	}
}

func testScanBounds(t *testing.T, s sessions.Store) {
	write(t, s, "a", "", "b", "", "b\x00", "", "c", "", "d", "")
	if got, want := keys(scanAll(t, s, []byte("b"), []byte("c"))), []string{"b", "b\x00"}; !slices.Equal(got, want) {
		t.Errorf("Scan[b, c) = %q, want %q (start inclusive, end exclusive)", got, want)
	}
	if got, want := keys(scanAll(t, s, []byte("c"), nil)), []string{"c", "d"}; !slices.Equal(got, want) {
		t.Errorf("Scan[c, nil) = %q, want %q", got, want)
	}
	if got := scanAll(t, s, []byte("x"), []byte("y")); len(got) != 0 {
		t.Errorf("Scan of an empty range = %q, want nothing", keys(got))
	}
	if got := scanAll(t, s, []byte("c"), []byte("b")); len(got) != 0 {
		t.Errorf("Scan with end before start = %q, want nothing", keys(got))
	}
}

// testScanKeys checks that a store with ScanKeys (see sessions.Store)
// yields from it exactly the keys Scan yields, bounds included, and stops
// when told; a store without it is not asked to have it.
func testScanKeys(t *testing.T, s sessions.Store) {
	ks, ok := s.(interface {
		ScanKeys(start, end []byte) iter.Seq2[[]byte, error]
	})
	if !ok {
		t.Skip("no ScanKeys")
	}
	write(t, s, "a", "1", "b", "", "b\x00", "22", "c", "333", "d", "4444")
	for _, r := range [][2][]byte{{nil, nil}, {[]byte("b"), []byte("c")}, {[]byte("c"), nil}, {[]byte("x"), []byte("y")}, {[]byte("c"), []byte("b")}} {
		var got []string
		for k, err := range ks.ScanKeys(r[0], r[1]) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(k))
		}
		if want := keys(scanAll(t, s, r[0], r[1])); !slices.Equal(got, want) {
			t.Errorf("ScanKeys[%q, %q) = %q, want Scan's keys %q", r[0], r[1], got, want)
		}
	}
	n := 0
	for _, err := range ks.ScanKeys(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("broke out of ScanKeys after %d keys, want 2", n)
	}
}

func testScanStopsEarly(t *testing.T, s sessions.Store) {
	write(t, s, "a", "1", "b", "2", "c", "3")
	n := 0
	for _, err := range s.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("broke out after %d entries, want 2", n)
	}
	// The store must still work after an abandoned scan.
	write(t, s, "d", "4")
	if got := len(scanAll(t, s, nil, nil)); got != 4 {
		t.Fatalf("after an abandoned scan and a write, %d entries, want 4", got)
	}
}

func testDeleteRange(t *testing.T, s sessions.Store) {
	write(t, s, "a", "", "b1", "", "b2", "", "b3", "", "c", "")
	n, err := s.DeleteRange([]byte("b"), []byte("c"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("DeleteRange[b, c) deleted %d, want 3", n)
	}
	if got, want := keys(scanAll(t, s, nil, nil)), []string{"a", "c"}; !slices.Equal(got, want) {
		t.Errorf("after DeleteRange, keys = %q, want %q", got, want)
	}
	n, err = s.DeleteRange([]byte("x"), []byte("z"), nil)
	if err != nil || n != 0 {
		t.Errorf("DeleteRange of an empty range = %d, %v; want 0, nil", n, err)
	}
	n, err = s.DeleteRange([]byte("a"), nil, nil)
	if err != nil || n != 2 {
		t.Errorf("DeleteRange[a, nil) = %d, %v; want 2, nil", n, err)
	}
	if got := scanAll(t, s, nil, nil); len(got) != 0 {
		t.Errorf("after deleting everything, Scan = %q", keys(got))
	}
}

func testDeleteMatching(t *testing.T, s sessions.Store) {
	write(t, s, "a", "", "b1", "", "b22", "", "b3", "", "b44", "", "c", "")
	n, err := s.DeleteRange([]byte("b"), []byte("c"), func(k []byte) bool { return len(k) == 2 })
	if err != nil || n != 2 {
		t.Fatalf("DeleteRange[b, c) of 2-byte keys = %d, %v; want 2, nil", n, err)
	}
	if got, want := keys(scanAll(t, s, nil, nil)), []string{"a", "b22", "b44", "c"}; !slices.Equal(got, want) {
		t.Errorf("after a matching DeleteRange, keys = %q, want %q", got, want)
	}
}

func testDeleteWhileScanning(t *testing.T, s sessions.Store) {
	write(t, s, "a", "1", "b", "2", "c", "3")
	seen := 0
	for _, err := range s.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if seen == 0 {
			if _, err := s.DeleteRange([]byte("b"), []byte("c"), nil); err != nil {
				t.Fatalf("DeleteRange during Scan: %v", err)
			}
		}
		seen++
	}
	if got, want := keys(scanAll(t, s, nil, nil)), []string{"a", "c"}; !slices.Equal(got, want) {
		t.Errorf("after DeleteRange during a scan, keys = %q, want %q", got, want)
	}
}

func testEmptyValue(t *testing.T, s sessions.Store) {
	write(t, s, "k", "")
	got := scanAll(t, s, nil, nil)
	if len(got) != 1 || len(got[0].Value) != 0 {
		t.Fatalf("empty value: Scan = %q", got)
	}
}

func testWriteDoesNotRetain(t *testing.T, s sessions.Store) {
	k, v := []byte("key"), []byte("value")
	if err := s.Write([]sessions.Entry{{Key: k, Value: v}}); err != nil {
		t.Fatal(err)
	}
	k[0], v[0] = 'X', 'X'
	got := scanAll(t, s, nil, nil)
	if len(got) != 1 || string(got[0].Key) != "key" || string(got[0].Value) != "value" {
		t.Fatalf("store kept the caller's slices: Scan = %q", got)
	}
}

func testLargeBatch(t *testing.T, s sessions.Store) {
	const n = 20000
	es := make([]sessions.Entry, n)
	for i := range es {
		es[i] = sessions.Entry{Key: fmt.Appendf(nil, "k%08d", n-1-i), Value: bytes.Repeat([]byte{byte(i)}, 100)}
	}
	if err := s.Write(es); err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, s, nil, nil)
	if len(got) != n {
		t.Fatalf("wrote %d entries, scanned %d", n, len(got))
	}
	for i, e := range got {
		if want := fmt.Sprintf("k%08d", i); string(e.Key) != want {
			t.Fatalf("entry %d key = %q, want %q", i, e.Key, want)
		}
		if want := byte(n - 1 - i); len(e.Value) != 100 || e.Value[0] != want {
			t.Fatalf("entry %d value wrong", i)
		}
	}
	if del, err := s.DeleteRange([]byte("k00005000"), []byte("k00015000"), nil); err != nil || del != 10000 {
		t.Fatalf("DeleteRange = %d, %v; want 10000", del, err)
	}
}

func testClose(t *testing.T, s sessions.Store) {
	write(t, s, "k", "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := s.Write([]sessions.Entry{{Key: []byte("k2")}}); err == nil {
		t.Errorf("Write after Close succeeded, want an error")
	} else if !errors.Is(err, sessions.ErrClosed) {
		t.Errorf("Write after Close = %v, want errors.Is(err, sessions.ErrClosed)", err)
	}
	for _, err := range s.Scan(nil, nil) {
		if err == nil {
			t.Errorf("Scan after Close yielded an entry")
		}
		break
	}
}
