package sessions_test

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// recordedStore records sessions through the real Recorder into a memory
// store, one per start, each with a compile and a mark (named after the
// store and the session), and returns the store.
func recordedStore(t *testing.T, name string, starts ...time.Time) *sessions.MemStore {
	t.Helper()
	mem := sessions.NewMemStore()
	for i, start := range starts {
		testsupport.Write(t, func() (sessions.Store, error) { return testsupport.NoClose{Store: mem}, nil }, start,
			recorder.Config{Label: fmt.Sprintf("%s %d", name, i)}, func(s *testsupport.Session) {
				s.Put(sessions.MarksKind, sessions.Observed, s.Stamp(start), sessions.Record{Name: fmt.Sprintf("%s mark %d", name, i)})
				s.Put("compile", sessions.Changed, s.Stamp(start.Add(time.Millisecond)), sessions.Record{Name: fmt.Sprintf("%s compile %d", name, i)})
			})
	}
	return mem.Reopen()
}

// Stores written apart (two runners, say) read as one: every session of
// both, oldest first, and the records of every kind in stamp order across
// them; what a reader of one store asks (kinds, counts, stamps) answers
// for both.
func TestUnionReadsStoresAsOne(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := recordedStore(t, "a", t0, t0.Add(2*time.Hour))
	b := recordedStore(t, "b", t0.Add(time.Hour))
	b.Write([]sessions.Entry{testsupport.RecordEntry(t, "autotune", sessions.Stamp{Session: 77, Seq: 0}, sessions.Record{Name: "b orphan"})})
	r := sessions.NewRecords(sessions.Union([]sessions.Store{a, b}, nil))

	var labels []string
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, s.Label)
	}
	if want := []string{"a 0", "b 0", "a 1"}; !slices.Equal(labels, want) {
		t.Errorf("sessions %q, want %q (both stores', by id)", labels, want)
	}
	kinds, err := r.Kinds()
	if err != nil || !slices.Equal(kinds, []string{"autotune", "compile", "marks"}) {
		t.Errorf("kinds %q (%v), want both stores'", kinds, err)
	}
	var names []string
	for kr, err := range r.InStampOrder(nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, kr.Record.Name)
	}
	if want := []string{"b orphan", "a mark 0", "a compile 0", "b mark 0", "b compile 0", "a mark 1", "a compile 1"}; !slices.Equal(names, want) {
		t.Errorf("records in stamp order %q\nwant %q", names, want)
	}
	counts, err := r.Counts()
	if err != nil || len(counts) != 4 {
		t.Errorf("counts of %d sessions (%v), want 4", len(counts), err)
	}
	n := 0
	for _, err := range r.Stamps() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 7 {
		t.Errorf("%d stamps, want 7", n)
	}
}

// A key held by several stores (one store copied twice) is read once,
// from the first store given.
func TestUnionReadsAKeyHeldTwiceOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := recordedStore(t, "a", t0)
	copied := sessions.NewMemStore()
	for key, value := range testsupport.Entries(t, a) {
		copied.Write([]sessions.Entry{{Key: []byte(key), Value: value}})
	}
	// The copy's compile says otherwise: the first store's is read.
	for _, kr := range testsupport.AllRecords(t, copied) {
		if kr.Kind == "compile" {
			kr.Record.Name = "the copy's"
			copied.Write([]sessions.Entry{testsupport.RecordEntry(t, kr.Kind, kr.Stamp, kr.Record)})
		}
	}
	for _, stores := range [][]sessions.Store{{a, copied}, {copied, a}} {
		got := testsupport.AllRecords(t, sessions.Union(stores, nil))
		if len(got) != 2 || got[1].Record.Name != testsupport.AllRecords(t, stores[0])[1].Record.Name {
			t.Errorf("records %+v; want the first store's two", got)
		}
	}
	if ids := testsupport.SessionIDs(t, sessions.Union([]sessions.Store{a, copied, a}, nil)); len(ids) != 1 {
		t.Errorf("sessions %v, want the one", ids)
	}
}

// failingStore is a store whose scans fail after after entries.
type failingStore struct {
	sessions.Store
	after int
	ended *int // counts scans that ended, stopped early or not
}

var errDamaged = errors.New("damaged block")

func (f failingStore) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		defer func() { *f.ended++ }()
		n := 0
		for e, err := range f.Store.Scan(start, end) {
			if n == f.after {
				yield(sessions.Entry{}, errDamaged)
				return
			}
			n++
			if !yield(e, err) {
				return
			}
		}
	}
}

// A store that fails while it is read is named through onError, and the
// others are still read; without onError its error ends the read. A read
// stopped early, or ended by an error, ends every store's scan.
func TestUnionGoesOnWithoutAFailingStore(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	good := recordedStore(t, "good", t0, t0.Add(time.Minute))
	ended := 0
	bad := failingStore{Store: recordedStore(t, "bad", t0.Add(time.Second)), after: 0, ended: &ended}

	var failed []string
	u := sessions.Union([]sessions.Store{good, bad}, func(i int, err error) { failed = append(failed, fmt.Sprint(i, ": ", err)) })
	got := testsupport.AllRecords(t, u)
	var names []string
	for _, kr := range got {
		names = append(names, kr.Record.Name)
	}
	if want := []string{"good mark 0", "good compile 0", "good mark 1", "good compile 1"}; !slices.Equal(names, want) || len(failed) == 0 || failed[0] != "1: damaged block" {
		t.Errorf("records %q, failures %q; want every record of the good store, and the bad one named", names, failed)
	}

	// Without onError the read fails, with the store's error.
	var err error
	for _, err = range sessions.Union([]sessions.Store{good, bad}, nil).Scan(nil, nil) {
		if err != nil {
			break
		}
	}
	if !errors.Is(err, errDamaged) {
		t.Errorf("a read without onError ended with %v, want the damaged store's error", err)
	}

	// A read stopped early stops every store's scan.
	ended = 0
	healthy := failingStore{Store: good, after: -1, ended: &ended}
	for range sessions.Union([]sessions.Store{healthy, healthy}, nil).Scan(nil, nil) {
		break
	}
	if ended != 2 {
		t.Errorf("%d scans ended after a read stopped early, want 2", ended)
	}
}

// A union is only read: writes, deletes and prunes are refused and change
// nothing.
func TestUnionRefusesWrites(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := recordedStore(t, "a", t0), recordedStore(t, "b", t0.Add(time.Hour))
	before := len(testsupport.Entries(t, a)) + len(testsupport.Entries(t, b))
	u := sessions.Union([]sessions.Store{a, b}, nil)
	if err := u.Write([]sessions.Entry{{Key: []byte("k"), Value: []byte("v")}}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Write: %v, want errors.ErrUnsupported", err)
	}
	if _, err := u.DeleteRange(nil, nil, nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("DeleteRange: %v, want errors.ErrUnsupported", err)
	}
	if _, err := sessions.NewRecords(u).Prune(0); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Prune: %v, want errors.ErrUnsupported", err)
	}
	if after := len(testsupport.Entries(t, a)) + len(testsupport.Entries(t, b)); after != before {
		t.Errorf("%d entries after, %d before", after, before)
	}
}

// Put writes rows and records as they were read: a store rebuilt from
// another's records reads the same, ids, seqs and offsets included.
func TestPutRebuildsAStore(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	orig := recordedStore(t, "orig", t0, t0.Add(time.Hour))
	rows := testsupport.SessionRows(t, orig)
	recs := testsupport.AllRecords(t, orig)

	rebuilt := sessions.NewMemStore()
	if err := sessions.NewRecords(rebuilt).Put(rows, recs); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.SessionRows(t, rebuilt); !reflect.DeepEqual(got, rows) {
		t.Errorf("rows %+v\nwant %+v", got, rows)
	}
	if got := testsupport.AllRecords(t, rebuilt); !reflect.DeepEqual(got, recs) {
		t.Errorf("records %+v\nwant %+v", got, recs)
	}
	// The same bytes a writer wrote, key for key, but its tally's (Put
	// takes rows and records, not what their writer let go).
	want, got := testsupport.Entries(t, orig), testsupport.Entries(t, rebuilt)
	for k := range want {
		if _, _, ok := keys.ParseTally([]byte(k)); ok {
			delete(want, k)
		}
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Errorf("key %q: %x, want the writer's %x", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d", len(got), len(want))
	}
}

// Put writes nothing of a batch holding a record no store holds, nor one
// a reader would skip: past a reader's limits or its decoding budget.
func TestPutRefusesWhatNoStoreHolds(t *testing.T) {
	ok := sessions.KindRecord{Kind: "compile", Stamped: sessions.Stamped[sessions.Record]{Stamp: sessions.Stamp{Session: 1}}}
	record := func(r sessions.Record) sessions.KindRecord {
		return sessions.KindRecord{Kind: "compile", Stamped: sessions.Stamped[sessions.Record]{Stamp: sessions.Stamp{Session: 1, Seq: 1}, Record: r}}
	}
	// One past a reader's attributes, under keys of three characters: a
	// row of them is within the 1 MiB a writer writes.
	many := make(sessions.Attrs, 1<<17+1)
	for i := range many {
		k := []byte{'!' + byte(i%94), '!' + byte(i/94%94), '!' + byte(i/94/94)}
		many[i] = sessions.Attr{Key: string(k), Value: sessions.BoolValue(true)}
	}
	// Few bytes, many small items: events of empty arrays under one-byte
	// keys are past what a reader lets decoding allocate.
	var empties sessions.Attrs
	for c := byte('!'); c < 0x7f; c++ {
		empties = append(empties, sessions.Attr{Key: string([]byte{c}), Value: sessions.SliceValue[string](nil)})
	}
	costly := sessions.Record{Name: "costly"}
	for range 60 {
		costly.Events = append(costly.Events, sessions.Event{Name: "e", Attributes: empties})
	}
	for _, c := range []struct {
		name    string
		row     sessions.Session
		bad     sessions.KindRecord
		wantErr error
	}{
		{"kind sessions", sessions.Session{ID: 1}, sessions.KindRecord{Kind: "sessions"}, sessions.ErrInvalidKind},
		{"kind not canonical", sessions.Session{ID: 1}, sessions.KindRecord{Kind: "/compile/"}, sessions.ErrInvalidKind},
		{"empty kind", sessions.Session{ID: 1}, sessions.KindRecord{Kind: ""}, sessions.ErrInvalidKind},
		{"over 15 MiB", sessions.Session{ID: 1}, record(sessions.Record{Name: strings.Repeat("x", 15<<20)}), sessions.ErrTooLarge},
		{"past the attributes", sessions.Session{ID: 1}, record(sessions.Record{Name: "many", Attributes: many}), sessions.ErrTooLarge},
		{"past the budget", sessions.Session{ID: 1}, record(costly), sessions.ErrTooLarge},
		{"a row past the attributes", sessions.Session{ID: 1, Resource: many}, ok, sessions.ErrTooLarge},
	} {
		mem := sessions.NewMemStore()
		err := sessions.NewRecords(mem).Put([]sessions.Session{c.row}, []sessions.KindRecord{ok, c.bad})
		if !errors.Is(err, c.wantErr) || mem.Len() != 0 {
			t.Errorf("%s: Put gave %v and wrote %d entries; want %v and nothing written", c.name, err, mem.Len(), c.wantErr)
		}
	}
	// The budget's record is the only thing wrong: a little less of it
	// goes in, and reads back.
	costly.Events = costly.Events[:5]
	mem := sessions.NewMemStore()
	if err := sessions.NewRecords(mem).Put([]sessions.Session{{ID: 1}}, []sessions.KindRecord{ok, record(costly)}); err != nil {
		t.Fatalf("Put of 5 events of empty arrays: %v", err)
	}
	if got := testsupport.AllRecords(t, mem); len(got) != 2 || len(got[1].Record.Events) != 5 {
		t.Errorf("read back %d records, want 2, the second with 5 events", len(got))
	}
}
