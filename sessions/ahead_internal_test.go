package sessions

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// aheadStore returns a store of n entries with values of every size a
// batch meets: empty (yielded as nil), small, and larger than a batch.
func aheadStore(t *testing.T, n int) *MemStore {
	s := NewMemStore()
	var es []Entry
	for i := range n {
		var v []byte
		switch {
		case i%7 == 0: // empty
		case i%331 == 0:
			v = bytes.Repeat([]byte{byte(i)}, aheadBytes+1)
		default:
			v = bytes.Repeat([]byte{byte(i)}, i%50+1)
		}
		es = append(es, Entry{Key: fmt.Appendf(nil, "k%06d", i), Value: v})
	}
	if err := s.Write(es); err != nil {
		t.Fatal(err)
	}
	return s
}

func collect(t *testing.T, seq iter.Seq2[Entry, error]) (out []Entry, err error) {
	for e, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
	}
	return out, nil
}

// TestScanAheadYieldsWhatTheStoreDoes checks that reading ahead yields
// the store's entries, in its order, over many batches and across bounds,
// with empty values nil as Scan yields them, and leaves no goroutine.
func TestScanAheadYieldsWhatTheStoreDoes(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("reads ahead only with more than one CPU")
	}
	defer goleak.VerifyNone(t)
	s := aheadStore(t, 5*aheadEntries+17)
	r := NewRecords(s)
	for _, b := range [][2][]byte{{nil, nil}, {[]byte("k000100"), []byte("k001000")}, {[]byte("x"), nil}} {
		want, err := collect(t, s.Scan(b[0], b[1]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := collect(t, r.scanAhead(b[0], b[1]))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("[%q, %q): %d entries, want %d", b[0], b[1], len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("[%q, %q) entry %d = %q, want %q", b[0], b[1], i, got[i].Key, want[i].Key)
			}
		}
	}
	for e, err := range r.scanAhead(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Value) == 0 && e.Value != nil {
			t.Fatalf("%q: an empty value yielded as %#v, want nil", e.Key, e.Value)
		}
	}
}

// TestScanAheadStops checks that a break, at any point of a batch or
// between batches, and a panic in the loop body end the goroutine
// reading ahead before the read returns.
func TestScanAheadStops(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("reads ahead only with more than one CPU")
	}
	defer goleak.VerifyNone(t)
	r := NewRecords(aheadStore(t, 4*aheadEntries))
	for _, at := range []int{1, aheadEntries - 1, aheadEntries, aheadEntries + 1, 3*aheadEntries + 5} {
		n := 0
		for _, err := range r.scanAhead(nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == at {
				break
			}
		}
		if n != at {
			t.Fatalf("broke at %d, got to %d", at, n)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the caller")
			}
		}()
		for range r.scanAhead(nil, nil) {
			panic("in the loop body")
		}
	}()
}

// TestScanAheadError checks that an error ending the store's scan is
// yielded once, after every entry before it.
func TestScanAheadError(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("reads ahead only with more than one CPU")
	}
	defer goleak.VerifyNone(t)
	boom := errors.New("disk gone")
	r := NewRecords(failingAfter{aheadStore(t, 3*aheadEntries), aheadEntries + 10, boom})
	n, errs := 0, 0
	for _, err := range r.scanAhead(nil, nil) {
		if err != nil {
			if !errors.Is(err, boom) {
				t.Fatalf("error %v, want %v", err, boom)
			}
			errs++
			continue
		}
		n++
	}
	if n != aheadEntries+10 || errs != 1 {
		t.Fatalf("%d entries and %d errors, want %d and 1", n, errs, aheadEntries+10)
	}
}

// failingAfter is a store whose scans fail after n entries.
type failingAfter struct {
	*MemStore
	n   int
	err error
}

func (f failingAfter) Scan(start, end []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		i := 0
		for e, err := range f.MemStore.Scan(start, end) {
			if i == f.n {
				yield(Entry{}, f.err)
				return
			}
			i++
			if !yield(e, err) {
				return
			}
		}
	}
}
