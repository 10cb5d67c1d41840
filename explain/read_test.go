package explain_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// A hundred thousand kinds of one record each: each kind's range is read
// once (and the kinds listed once), no kind gets a read of its own held
// open, and the records come back merged in stamp order.
func TestManyKinds(t *testing.T) {
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 10_000
	}
	store := &sliceStore{}
	id := record(store, manyKinds(n))
	store.scans, store.yielded = 0, 0
	before := runtime.NumGoroutine()
	i := 0
	for kr, err := range explain.InStampOrder(sessions.NewRecords(store), id, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if kr.Stamp.Seq != uint64(i) || kr.Kind != fmt.Sprintf("k%06d", i) {
			t.Fatalf("record %d: seq %d kind %s", i, kr.Stamp.Seq, kr.Kind)
		}
		if g := runtime.NumGoroutine(); g > before+1 {
			t.Fatalf("%d goroutines while merging, %d before", g, before)
		}
		i++
	}
	if i != n {
		t.Fatalf("merged %d records, want %d", i, n)
	}
	// Kinds costs a seek per kind (the sessions namespace among them) and
	// one past the last; then a scan per kind.
	if store.scans > 2*n+2 || store.yielded > 2*n+1 {
		t.Errorf("%d scans yielding %d entries for %d kinds of one record", store.scans, store.yielded, n)
	}
}

// A long kind gets an open read, and its records are read about once.
func TestLongKindsAreStreamed(t *testing.T) {
	const n = 5_000
	spans := flat(n)
	for i := range spans {
		spans[i].kind = []string{"a", "b", "c"}[i%3]
	}
	store := &sliceStore{}
	id := record(store, spans)
	store.scans, store.yielded = 0, 0
	i := 0
	for kr, err := range explain.InStampOrder(sessions.NewRecords(store), id, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if kr.Stamp.Seq != uint64(i) || kr.Kind != spans[i].kind {
			t.Fatalf("record %d: seq %d kind %s", i, kr.Stamp.Seq, kr.Kind)
		}
		i++
	}
	if i != n {
		t.Fatalf("merged %d records, want %d", i, n)
	}
	if max := n + 3*130 + 4; store.yielded > max {
		t.Errorf("%d entries read for %d records, want at most %d", store.yielded, n, max)
	}
}

// An error from the store ends the read with it.
func TestReadErrors(t *testing.T) {
	for _, n := range []int{10, 1000} {
		for _, after := range []int{1, 5, n / 2, n + 2} {
			store := &sliceStore{}
			spans := flat(n)
			for i := range spans {
				spans[i].kind = []string{"a", "b"}[i%2]
			}
			id := record(store, spans)
			store.yielded, store.failAfter = 0, after
			var err error
			for _, err = range explain.InStampOrder(sessions.NewRecords(store), id, nil) {
				if err != nil {
					break
				}
			}
			if err == nil {
				t.Errorf("%d records, failing after %d entries: no error", n, after)
			}
		}
	}
}

// Only the asked session is read, and an early break stops the read.
func TestInStampOrderOneSession(t *testing.T) {
	store := sessions.NewMemStore()
	first := record(store, flat(3))
	store = store.Reopen()
	second := recordAt(store, epoch.Add(time.Hour), flat(200))
	r := sessions.NewRecords(store.Reopen())
	for id, want := range map[sessions.SessionID]int{first: 3, second: 200} {
		got := 0
		for kr, err := range explain.InStampOrder(r, id, []string{"request", "missing"}) {
			if err != nil {
				t.Fatal(err)
			}
			if kr.Stamp.Session != id {
				t.Fatalf("session %s: record of session %s", id, kr.Stamp.Session)
			}
			got++
		}
		if got != want {
			t.Errorf("session %s: %d records, want %d", id, got, want)
		}
	}
	for range explain.InStampOrder(r, second, nil) {
		break
	}
}
