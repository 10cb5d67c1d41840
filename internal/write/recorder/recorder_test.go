package recorder_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

type opStore = testsupport.OpStore

func newOpStore() *opStore { return testsupport.NewOpStore() }

type fixture struct {
	rec    *recorder.Recorder
	store  *opStore
	opens  int
	now    time.Time
	t      *testing.T
	openMu sync.Mutex
}

func newFixture(t *testing.T, cfg recorder.Config, store *opStore) *fixture {
	f := &fixture{store: store, now: t0, t: t}
	if cfg.Level == 0 {
		cfg.Level = sessions.LevelBasic
	}
	f.rec = recorder.New(cfg, func() (sessions.Store, error) {
		f.openMu.Lock()
		defer f.openMu.Unlock()
		f.opens++
		return f.store, nil
	}, func() time.Time { return f.now })
	return f
}

// record stamps and records one record named name.
func (f *fixture) record(kind, name string, effect sessions.Effect, size int) sessions.Stamp {
	f.t.Helper()
	st, ok := f.rec.Stamp(time.Time{})
	if !ok {
		f.t.Fatalf("Stamp refused at level %v", f.rec.Level())
	}
	body := sessions.Record{Name: name}
	if size > 0 {
		body.Attributes = sessions.Attrs{{Key: "pad", Value: sessions.StringValue(string(make([]byte, size)))}}
	}
	if err := f.rec.Record(kind, effect, st, body); err != nil {
		f.t.Fatal(err)
	}
	return st
}

func names(t *testing.T, s sessions.Store, kind string) []string {
	return testsupport.Names(t, s, kind)
}

func sessionIDs(t *testing.T, s sessions.Store) []sessions.SessionID {
	return testsupport.SessionIDs(t, s)
}

func TestStartIsLazyAndWritesNothing(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	if _, ok := f.rec.Session(); ok {
		t.Fatal("session started before its first stamp")
	}
	st := f.record("compile", "a", sessions.Observed, 0)
	sess, ok := f.rec.Session()
	if !ok || sess.ID != st.Session || sess.ID != sessions.SessionID(t0.UnixNano()) {
		t.Fatalf("session after first stamp = %+v, %v; want id %d", sess, ok, t0.UnixNano())
	}
	if err := f.rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.opens != 0 || f.store.Len() != 0 {
		t.Fatalf("starting a session opened the store %d times and wrote %d entries; want neither", f.opens, f.store.Len())
	}
}

func TestObservedOnlySessionLeavesNothing(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	for i := range 100 {
		f.record("autotune", fmt.Sprint(i), sessions.Observed, 100)
	}
	f.rec.Label("warm")
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.opens != 0 || f.store.Len() != 0 {
		t.Fatalf("observing session opened the store %d times, wrote %d entries; want 0, 0", f.opens, f.store.Len())
	}
}

func TestFirstChangeKeepsHeldRecordsInOrder(t *testing.T) {
	f := newFixture(t, recorder.Config{Label: "cold"}, newOpStore())
	f.record("marks", "load", sessions.Observed, 0)
	f.record("autotune", "hit", sessions.Observed, 0)
	f.record("compile", "new", sessions.Changed, 0)
	f.record("autotune", "after", sessions.Observed, 0)
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"write sessions 0", "write marks 0", "write autotune 1", "write compile 2", "write autotune 3", "write tally"}
	if !slices.Equal(f.store.Ops, want) {
		t.Fatalf("writes = %q, want %q", f.store.Ops, want)
	}
	if got := names(t, f.store, "autotune"); !slices.Equal(got, []string{"hit", "after"}) {
		t.Fatalf("autotune records = %q", got)
	}
	ids := sessionIDs(t, f.store)
	if len(ids) != 1 {
		t.Fatalf("sessions = %v, want one", ids)
	}
	sess, _, _ := sessions.NewRecords(f.store).Session(ids[0])
	if sess.Label != "cold" || sess.Process == 0 || sess.OS == "" || sess.Arch == "" || sess.Version == "" || sess.StartedUnixMs != t0.UnixMilli() {
		t.Fatalf("session row = %+v", sess)
	}
}

func TestBudgetEvictsOldestKeepsNewestRun(t *testing.T) {
	// Each record: key (records/v1/autotune + 17) + value; measure one.
	probe := sessions.NewMemStore()
	pf := newFixture(t, recorder.Config{}, &opStore{MemStore: probe})
	pf.record("autotune", "r00", sessions.Changed, 200)
	pf.rec.Close(context.Background())
	var size int
	for e := range probe.Scan([]byte("records/v1/autotune"), []byte("records/v1/autotunf")) {
		size = len(e.Key) + len(e.Value)
	}
	f := newFixture(t, recorder.Config{PendingBudget: 3*size + size/2}, newOpStore())
	for i := range 10 {
		f.record("autotune", fmt.Sprintf("r%02d", i), sessions.Observed, 200)
	}
	if st := f.rec.Stats(); st.Held != 3 || st.Evicted != 7 {
		t.Fatalf("held %d evicted %d; want 3 held (the budget fits 3.5), 7 evicted", st.Held, st.Evicted)
	}
	f.record("compile", "change", sessions.Changed, 0)
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, f.store, "autotune"), []string{"r07", "r08", "r09"}; !slices.Equal(got, want) {
		t.Fatalf("kept held records = %q, want the newest contiguous run %q", got, want)
	}
}

func TestRecordLargerThanBudgetEmptiesBuffer(t *testing.T) {
	f := newFixture(t, recorder.Config{PendingBudget: 1000}, newOpStore())
	f.record("autotune", "small", sessions.Observed, 10)
	f.record("autotune", "huge", sessions.Observed, 5000)
	if st := f.rec.Stats(); st.Held != 0 || st.HeldBytes != 0 || st.Evicted != 2 {
		t.Fatalf("after an oversized record: held %d (%d bytes), evicted %d; want 0, 0, 2", st.Held, st.HeldBytes, st.Evicted)
	}
	f.record("autotune", "next", sessions.Observed, 10)
	f.record("compile", "c", sessions.Changed, 0)
	f.rec.Close(context.Background())
	if got := names(t, f.store, "autotune"); !slices.Equal(got, []string{"next"}) {
		t.Fatalf("autotune = %q, want [next]", got)
	}
}

func TestNegativeBudgetHoldsNothing(t *testing.T) {
	f := newFixture(t, recorder.Config{PendingBudget: -1}, newOpStore())
	f.record("autotune", "before", sessions.Observed, 0)
	f.record("compile", "c", sessions.Changed, 0)
	f.record("autotune", "after", sessions.Observed, 0)
	f.rec.Close(context.Background())
	if got := names(t, f.store, "autotune"); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("autotune = %q, want only the record after the change", got)
	}
}

// seedSessions writes n kept sessions, an hour apart from t0-n hours, with
// one compile record each.
func seedSessions(t *testing.T, s *opStore, n int) []sessions.SessionID {
	t.Helper()
	for i := range n {
		f := newFixture(t, recorder.Config{}, s)
		f.now = t0.Add(-time.Duration(n-i) * time.Hour)
		f.record("compile", fmt.Sprintf("old%d", i), sessions.Changed, 0)
		if err := f.rec.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s.Ops = nil
	return sessionIDs(t, s)
}

func TestKeepSessionsPrunesOthersFirst(t *testing.T) {
	s := newOpStore()
	seedSessions(t, s, 4)
	f := newFixture(t, recorder.Config{KeepSessions: 2}, s)
	f.record("autotune", "held", sessions.Observed, 0)
	f.record("compile", "new", sessions.Changed, 0)
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The deletes (records, then the seeded sessions' tallies, then rows)
	// come before the session row, which comes before the held record and
	// the change.
	want := []string{"delete 3", "delete 3", "delete 1", "delete 1", "delete 1", "write sessions 0", "write autotune 0", "write compile 1", "write tally"}
	if !slices.Equal(s.Ops, want) {
		t.Fatalf("ops = %q, want %q", s.Ops, want)
	}
	if got := names(t, s, "compile"); !slices.Equal(got, []string{"old3", "new"}) {
		t.Fatalf("compile after keep with KeepSessions 2 = %q, want [old3 new]", got)
	}
	if n := len(sessionIDs(t, s)); n != 2 {
		t.Fatalf("%d sessions left, want 2", n)
	}
}

func TestKeepSessionsOneKeepsOnlyThisSession(t *testing.T) {
	s := newOpStore()
	seedSessions(t, s, 3)
	f := newFixture(t, recorder.Config{KeepSessions: 1}, s)
	f.record("compile", "new", sessions.Changed, 0)
	f.rec.Close(context.Background())
	ids := sessionIDs(t, s)
	if len(ids) != 1 || ids[0] != sessions.SessionID(t0.UnixNano()) {
		t.Fatalf("sessions = %v, want only the kept one", ids)
	}
	if got := names(t, s, "compile"); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("compile = %q", got)
	}
}

func TestLabelBeforeAndAfterKeep(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprint("after=", after), func(t *testing.T) {
			f := newFixture(t, recorder.Config{Label: "initial"}, newOpStore())
			if !after {
				f.record("autotune", "a", sessions.Observed, 0)
				f.rec.Label("before keep")
				f.record("compile", "c", sessions.Changed, 0)
			} else {
				f.record("compile", "c", sessions.Changed, 0)
				if err := f.rec.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				f.rec.Label("after keep")
				if err := f.rec.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			want := map[bool]string{false: "before keep", true: "after keep"}[after]
			// Read before Close: a kept session's row is rewritten at the
			// next flush, not at the end.
			if !after {
				f.rec.Flush(context.Background())
			}
			var got []string
			for s, err := range sessions.NewRecords(f.store).Sessions() {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, s.Label)
			}
			if !slices.Equal(got, []string{want}) {
				t.Fatalf("labels = %q, want [%q]", got, want)
			}
		})
	}
}

func TestLevelOffStampsNothing(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	f.rec.SetLevel(sessions.LevelOff)
	if _, ok := f.rec.Stamp(time.Time{}); ok {
		t.Fatal("Stamp at level off succeeded")
	}
	if _, ok := f.rec.Session(); ok {
		t.Fatal("a session started at level off")
	}
	f.rec.SetLevel(sessions.LevelBasic)
	a := f.record("compile", "a", sessions.Changed, 0)
	f.rec.SetLevel(sessions.LevelOff)
	f.rec.SetLevel(sessions.LevelFull)
	b := f.record("compile", "b", sessions.Changed, 0)
	if a.Session != b.Session || b.Seq != a.Seq+1 {
		t.Fatalf("changing the level ended the session: stamps %+v then %+v", a, b)
	}
}

func TestStampsUniqueAcrossGoroutines(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	const g, n = 8, 2000
	seqs := make([][]uint64, g)
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			for range n {
				st, _ := f.rec.Stamp(time.Time{})
				seqs[i] = append(seqs[i], st.Seq)
			}
		})
	}
	wg.Wait()
	all := slices.Concat(seqs...)
	slices.Sort(all)
	for i, s := range all {
		if s != uint64(i) {
			t.Fatalf("seqs are not 0..%d without repeats: position %d holds %d", g*n-1, i, s)
		}
	}
}

// The session starts at its first stamp's instant, not at a clock read
// after it, so the first record's offset is 0 and the others' are exact.
// A later stamp that says it began earlier gets a negative offset rather
// than a clamped one.
func TestOffsetsFromSessionStart(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	f.now = t0.Add(time.Second) // the clock reads later than any stamp
	first, _ := f.rec.Stamp(t0.Add(-time.Millisecond))
	later, _ := f.rec.Stamp(t0.Add(5 * time.Millisecond))
	earlier, _ := f.rec.Stamp(t0.Add(-3 * time.Millisecond))
	if first.Offset != 0 || later.Offset != 6*time.Millisecond || earlier.Offset != -2*time.Millisecond {
		t.Fatalf("offsets = %v, %v, %v; want 0, 6ms, -2ms", first.Offset, later.Offset, earlier.Offset)
	}
	if want := sessions.SessionID(t0.Add(-time.Millisecond).UnixNano()); first.Session != want {
		t.Fatalf("session id %d, want the first stamp's instant %d", first.Session, want)
	}
	// A first stamp for an instant still to come does not move the start
	// past the clock's reading.
	g := newFixture(t, recorder.Config{}, newOpStore())
	ahead, _ := g.rec.Stamp(t0.Add(time.Second))
	if ahead.Offset != time.Second || ahead.Session != sessions.SessionID(t0.UnixNano()) {
		t.Fatalf("stamp ahead of the clock = %+v, want offset 1s in a session started at the clock's reading", ahead)
	}
}

// Sessions started through one IDs at the same instant get distinct ids,
// each at most 2^IDRandomBits ns before the start, and the session starts
// at the instant its id names: the first record's offset makes up the
// difference, so id + offset is still the record's start.
func TestIDsAreUniqueForEqualStarts(t *testing.T) {
	var ids recorder.IDs
	seen := map[sessions.SessionID]bool{}
	later := func() time.Time { return t0.Add(time.Hour) }
	for range 1000 {
		rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, IDs: &ids}, nil, later)
		st, _ := rec.Stamp(t0)
		if seen[st.Session] {
			t.Fatalf("id %d given twice", st.Session)
		}
		seen[st.Session] = true
		lag := t0.UnixNano() - int64(st.Session)
		if lag < 0 || lag >= 1<<recorder.IDRandomBits || st.Offset != time.Duration(lag) {
			t.Fatalf("id %d, offset %v for a start at %d: want an id at most 2^%d ns before, offset the difference",
				st.Session, st.Offset, t0.UnixNano(), recorder.IDRandomBits)
		}
		sess, _ := rec.Session()
		if !sess.Started().Add(st.Offset).Equal(t0) {
			t.Fatalf("Started %v + offset %v != the first stamp's instant %v", sess.Started(), st.Offset, t0)
		}
	}
	// Without IDs, a session's id is its start as is.
	rec := recorder.New(recorder.Config{Level: sessions.LevelBasic}, nil, later)
	if st, _ := rec.Stamp(t0); st.Session != sessions.SessionID(t0.UnixNano()) {
		t.Fatalf("id without IDs = %d, want %d", st.Session, t0.UnixNano())
	}
}

func TestFlushRetriesAfterOpenFails(t *testing.T) {
	s := newOpStore()
	fails := 2
	rec := recorder.New(recorder.Config{Level: sessions.LevelBasic}, func() (sessions.Store, error) {
		if fails > 0 {
			fails--
			return nil, errors.New("store busy")
		}
		return s, nil
	}, func() time.Time { return t0 })
	for i, e := range []sessions.Effect{sessions.Observed, sessions.Changed, sessions.Observed} {
		st, _ := rec.Stamp(time.Time{})
		rec.Record("compile", e, st, sessions.Record{Name: fmt.Sprint(i)})
	}
	if err := rec.Flush(context.Background()); err == nil {
		t.Fatal("Flush with a failing open returned nil")
	}
	st, _ := rec.Stamp(time.Time{})
	rec.Record("compile", sessions.Observed, st, sessions.Record{Name: "3"})
	if err := rec.Flush(context.Background()); err == nil {
		t.Fatal("second Flush with a failing open returned nil")
	}
	s.FailWrites = 1
	if err := rec.Flush(context.Background()); err == nil {
		t.Fatal("Flush with a failing write returned nil")
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := names(t, s, "compile"); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Fatalf("after retries, compile = %q, want all four in order", got)
	}
	if st := rec.Stats(); st.WriteErrors != 3 || st.Written != 4 {
		t.Fatalf("stats = %+v, want 3 write errors, 4 written", st)
	}
}

func TestRecordRefusesInvalidKinds(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	for _, kind := range []string{"", "/", "sessions", "/sessions/", "a\x00b", string(bytes.Repeat([]byte("k"), 129))} {
		st, _ := f.rec.Stamp(time.Time{})
		if err := f.rec.Record(kind, sessions.Changed, st, sessions.Record{}); !errors.Is(err, sessions.ErrInvalidKind) {
			t.Errorf("Record(%q) = %v, want ErrInvalidKind", kind, err)
		}
	}
	if f.rec.Kept() {
		t.Fatal("an invalid change kept the session")
	}
	if got := f.rec.Stats().Invalid; got != 6 {
		t.Fatalf("Invalid = %d, want 6", got)
	}
}

func TestRecordAfterClose(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	f.rec.Close(context.Background())
	st, _ := f.rec.Stamp(time.Time{})
	if err := f.rec.Record("compile", sessions.Changed, st, sessions.Record{}); !errors.Is(err, sessions.ErrClosed) {
		t.Fatalf("Record after Close = %v, want ErrClosed", err)
	}
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// parseKey splits a key into its kind and stamp, as keys.Parse does.
func parseKey(k []byte) (string, sessions.Stamp, error) {
	kind, session, seq, err := keys.Parse(k)
	return kind, sessions.Stamp{Session: sessions.SessionID(session), Seq: seq}, err
}
