package recorder_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
)

// encoded stamps a record named name and encodes it as the exporter does.
func (f *fixture) encoded(name string, effect sessions.Effect) (sessions.Stamp, []byte) {
	f.t.Helper()
	st, ok := f.rec.Stamp(f.now)
	if !ok {
		f.t.Fatal("Stamp refused")
	}
	v, err := recorder.AppendEncoded(make([]byte, 0, 256), "autotune", st, &sessions.Record{Name: name, Effect: effect})
	if err != nil {
		f.t.Fatal(err)
	}
	return st, v
}

// RecordEncoded copies what it is given: the caller reuses its buffer at
// once, and the records held, then kept, then written read back as they
// were encoded.
func TestRecordEncodedCopiesTheValue(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	buf := make([]byte, 0, 256)
	record := func(name string, effect sessions.Effect) {
		st, v := f.encoded(name, effect)
		buf = append(buf[:0], v...)
		if err := f.rec.RecordEncoded("autotune", effect, st, buf); err != nil {
			t.Fatal(err)
		}
		clear(buf) // as a caller reusing it would
	}
	record("held", sessions.Observed)
	record("change", sessions.Changed)
	for i := range 3 {
		record(fmt.Sprint("after ", i), sessions.Observed)
		if err := f.rec.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	got := fmt.Sprint(names(t, f.store, "autotune"))
	if want := "[held change after 0 after 1 after 2]"; got != want {
		t.Fatalf("records = %s, want %s", got, want)
	}
}

// A session at its pace allocates nothing per record: held records go
// into the hold's ring, kept ones into the batch's arena, which a written
// batch gives back for the next.
func TestRecordEncodedAllocatesNothing(t *testing.T) {
	f := &fixture{t: t, now: t0}
	store := discardStore{sessions.NewMemStore()}
	f.rec = recorder.New(recorder.Config{Level: sessions.LevelBasic, PendingBudget: 64 << 10},
		func() (sessions.Store, error) { return store, nil }, func() time.Time { return f.now })
	st, v := f.encoded("warm", sessions.Observed)
	hold := func() {
		if err := f.rec.RecordEncoded("autotune", sessions.Observed, st, v); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 { // the ring grows to its budget
		hold()
	}
	if n := testing.AllocsPerRun(1000, hold); n != 0 {
		t.Errorf("holding a record allocates %v times, want 0", n)
	}
	cst, cv := f.encoded("change", sessions.Changed)
	if err := f.rec.RecordEncoded("autotune", sessions.Changed, cst, cv); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	batch := func() {
		for range 100 {
			if err := f.rec.RecordEncoded("autotune", sessions.Observed, st, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.rec.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	batch()
	batch() // both buffers have grown
	if n := testing.AllocsPerRun(20, batch); n != 0 {
		t.Errorf("queueing and writing 100 kept records allocates %v times, want 0", n)
	}
}

// discardStore writes nothing, so that only the Recorder's allocations
// are counted.
type discardStore struct{ *sessions.MemStore }

func (discardStore) Write([]sessions.Entry) error { return nil }

// Imported sessions keep no batch of their own between writes, but share
// emptied ones: senders of a gateway taking turns write what each was
// given, and a batch after the first allocates nothing for its arena.
func TestImportedSessionsShareTheirBatches(t *testing.T) {
	store := newOpStore()
	fs := make([]*fixture, 2)
	for i := range fs {
		fs[i] = newFixture(t, recorder.Config{Imported: true, PendingBudget: 64 << 10}, store)
		fs[i].now = t0.Add(time.Duration(i) * time.Second) // sessions of their own
	}
	ctx := context.Background()
	var want [2][]string
	batch := func(i, round int) {
		f := fs[i]
		for j := range 50 {
			name := fmt.Sprintf("s%d r%d #%d", i, round, j)
			effect := sessions.Observed
			if round == 0 && j == 0 {
				effect = sessions.Changed
			}
			st, v := f.encoded(name, effect)
			if err := f.rec.RecordEncoded("autotune", effect, st, v); err != nil {
				t.Fatal(err)
			}
			want[i] = append(want[i], name)
		}
		if err := f.rec.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 10 {
		batch(0, round)
		batch(1, round)
	}
	for i, f := range fs {
		id, ok := f.rec.Session()
		if !ok {
			t.Fatal("no session")
		}
		if _, ok, err := sessions.NewRecords(store).Session(id.ID); !ok || err != nil {
			t.Errorf("session %d: no row written (%v)", i, err)
		}
		var got []string
		for r, err := range sessions.NewRecords(store).All("autotune", sessions.InSession(id.ID)) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Record.Name)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("session %d wrote %d records, %.200q..., want %d, %.200q...", i, len(got), got, len(want[i]), want[i])
		}
	}
	// Only the pool's buffers: a discarding store, records encoded once.
	d := discardStore{sessions.NewMemStore()}
	f := &fixture{t: t, now: t0}
	f.rec = recorder.New(recorder.Config{Imported: true, Level: sessions.LevelBasic, PendingBudget: 64 << 10},
		func() (sessions.Store, error) { return d, nil }, func() time.Time { return f.now })
	cst, cv := f.encoded("change", sessions.Changed)
	if err := f.rec.RecordEncoded("autotune", sessions.Changed, cst, cv); err != nil {
		t.Fatal(err)
	}
	st, v := f.encoded("kept", sessions.Observed)
	write := func() {
		for range 100 {
			if err := f.rec.RecordEncoded("autotune", sessions.Observed, st, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.rec.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write()
	write()
	// Without the pool a batch allocates 23 times as its arena grows. The
	// race detector makes sync.Pool drop a quarter of what it is given, at
	// random: 2-10 a batch then (20 runs under -race, median 6), and a
	// bound well under 23.
	limit := 1.0
	if raceEnabled {
		limit = 15
	}
	if n := testing.AllocsPerRun(20, write); n > limit {
		t.Errorf("queueing and writing 100 records of an imported session allocates %v times, want at most %v (the pool's)", n, limit)
	}
}

// The records a session holds take at most its budget in memory, however
// small they are: each one's payload (seq, kind, tally hint) and the
// hold's header fit within what its key counts (package hold's bound).
func TestHeldRecordsTakeAtMostTheBudget(t *testing.T) {
	const budget = 64 << 10
	f := newFixture(t, recorder.Config{PendingBudget: budget}, newOpStore())
	v, err := recorder.AppendEncoded(nil, "a", sessions.Stamp{}, &sessions.Record{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 * budget / len(v) {
		if err := f.rec.RecordEncodedIn(recorder.Trace{}, "a", sessions.Observed, f.stamp(), v, tally.Hint{Name: 1, Wall: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if m := f.rec.HeldMemory(); m > budget || f.rec.Stats().Evicted == 0 {
		t.Fatalf("held records take %d bytes of a %d budget (%d evicted)", m, budget, f.rec.Stats().Evicted)
	}
}
