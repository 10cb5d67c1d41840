package recorder_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
)

// traced stamps a record named name in trace tr and routes it, encoded, as
// the exporter does.
func (f *fixture) traced(tr byte, name string, effect sessions.Effect) {
	f.t.Helper()
	st, ok := f.rec.Stamp(time.Time{})
	if !ok {
		f.t.Fatal("Stamp refused")
	}
	v, err := recorder.AppendEncoded(nil, "step", st, &sessions.Record{Name: name, Effect: effect})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.rec.RecordEncodedIn(trace(tr), "step", effect, st, v, tally.Hint{}); err != nil {
		f.t.Fatal(err)
	}
}

func trace(b byte) recorder.Trace { return recorder.Trace{15: b} }

func (f *fixture) flush() {
	f.t.Helper()
	if err := f.rec.Flush(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func byTrace(budget int) recorder.Config {
	return recorder.Config{KeepBy: recorder.KeepByTrace, PendingBudget: budget}
}

func (f *fixture) wantSteps(want ...string) {
	f.t.Helper()
	if got := names(f.t, f.store, "step"); !slices.Equal(got, want) {
		f.t.Fatalf("stored %q, want %q", got, want)
	}
}

func TestKeepByTraceKeepsOnlyTracesThatChanged(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	f.traced(1, "a-lookup", sessions.Observed)
	f.traced(2, "b-lookup", sessions.Observed)
	f.traced(1, "a-request", sessions.Observed)
	f.rec.EndTrace(trace(1))
	f.traced(2, "b-compile", sessions.Changed) // keeps b at once, with what it held
	f.traced(2, "b-request", sessions.Observed)
	f.rec.EndTrace(trace(2))
	f.traced(3, "c-lookup", sessions.Observed)
	f.traced(3, "c-request", sessions.Observed)
	f.rec.EndTrace(trace(3))
	f.now = f.now.Add(recorder.TraceGrace)
	if f.rec.DecideTraces() {
		t.Fatal("traces still wait after their grace")
	}
	f.flush()
	f.wantSteps("b-lookup", "b-compile", "b-request")
	if ids := sessionIDs(t, f.store); len(ids) != 1 {
		t.Fatalf("%d session rows, want the one kept with its first kept trace", len(ids))
	}
	s := f.rec.Stats()
	if s.TracesKept != 1 || s.TracesDropped != 2 || s.TracesEvicted != 0 || s.Held != 0 || s.HeldBytes != 0 {
		t.Fatalf("stats %+v, want 1 trace kept, 2 dropped, nothing held", s)
	}

	// The session is kept; later traces are still decided one by one.
	f.traced(4, "d-lookup", sessions.Observed)
	f.rec.EndTrace(trace(4))
	f.traced(5, "e-compile", sessions.Changed)
	f.now = f.now.Add(recorder.TraceGrace)
	f.rec.DecideTraces()
	f.flush()
	f.wantSteps("b-lookup", "b-compile", "b-request", "e-compile")
}

func TestKeepByTraceWarmServerNeverOpensTheStore(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	for i := range 1000 {
		tr := byte(i%250 + 1)
		f.traced(tr, "lookup", sessions.Observed)
		f.traced(tr, "request", sessions.Observed)
		f.rec.EndTrace(trace(tr))
		f.now = f.now.Add(10 * time.Millisecond)
		f.rec.DecideTraces()
	}
	f.now = f.now.Add(recorder.TraceGrace)
	f.rec.DecideTraces()
	f.flush()
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.opens != 0 || f.rec.Kept() {
		t.Fatalf("a server that changed nothing opened its store %d times (kept %v)", f.opens, f.rec.Kept())
	}
	if s := f.rec.Stats(); s.TracesDropped == 0 || s.TracesKept != 0 {
		t.Fatalf("stats %+v, want traces dropped and none kept", s)
	}
}

func TestKeepByTraceGraceTakesChildrenEndingAfterTheirRoot(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	f.traced(1, "request", sessions.Observed)
	f.rec.EndTrace(trace(1))
	f.now = f.now.Add(recorder.TraceGrace - time.Millisecond)
	if !f.rec.DecideTraces() {
		t.Fatal("a trace in its grace was decided")
	}
	f.traced(1, "cache write", sessions.Changed) // its handler's goroutine, after the response
	f.flush()
	f.wantSteps("request", "cache write")

	// Past the grace, a trace that changed nothing is dropped.
	f.traced(2, "request 2", sessions.Observed)
	f.rec.EndTrace(trace(2))
	f.now = f.now.Add(recorder.TraceGrace / 2)
	f.traced(2, "late lookup 2", sessions.Observed)
	if !f.rec.DecideTraces() || f.rec.Stats().Held != 2 {
		t.Fatalf("trace 2 not held through its grace: %+v", f.rec.Stats())
	}
	f.now = f.now.Add(recorder.TraceGrace / 2)
	f.rec.DecideTraces()
	if s := f.rec.Stats(); s.Held != 0 || s.TracesDropped != 1 {
		t.Fatalf("stats %+v, want trace 2 dropped whole after its grace", s)
	}
	f.flush()
	f.wantSteps("request", "cache write")
}

func TestKeepByTraceRemembersDecisionsForLateSpans(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	f.traced(1, "kept", sessions.Changed)
	f.rec.EndTrace(trace(1))
	f.traced(2, "dropped", sessions.Observed)
	f.rec.EndTrace(trace(2))
	f.now = f.now.Add(recorder.TraceGrace)
	f.rec.DecideTraces()

	f.traced(1, "late of kept", sessions.Observed)
	f.traced(2, "late of dropped", sessions.Observed)
	if s := f.rec.Stats(); s.Held != 0 {
		t.Fatalf("a late span of a decided trace was held: %+v", s)
	}
	f.flush()
	f.wantSteps("kept", "late of kept")

	// A late change to a dropped trace is kept all the same (it changed
	// the caches), and the trace with it from then on.
	f.traced(2, "late change", sessions.Changed)
	f.traced(2, "after it", sessions.Observed)
	f.flush()
	f.wantSteps("kept", "late of kept", "late change", "after it")

	// Forgotten after DecisionTTL: a late span is then held as a new
	// trace's, and dropped with it.
	f.now = f.now.Add(recorder.DecisionTTL)
	f.rec.DecideTraces()
	f.traced(1, "forgotten", sessions.Observed)
	if s := f.rec.Stats(); s.Held != 1 {
		t.Fatalf("a span of a forgotten trace: %+v, want it held anew", s)
	}
}

func TestKeepByTraceForgetsAllButTheNewestDecisions(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	n := recorder.MaxDecisions + 10
	for i := range n {
		tr := recorder.Trace{0: byte(i >> 8), 1: byte(i), 15: 1}
		if err := f.rec.RecordEncodedIn(tr, "step", sessions.Changed, f.stamp(), f.value("x"), tally.Hint{}); err != nil {
			t.Fatal(err)
		}
	}
	// The oldest decisions are forgotten: a late span of the first trace
	// is held, one of the last is written.
	first, last := recorder.Trace{15: 1}, recorder.Trace{0: byte((n - 1) >> 8), 1: byte(n - 1), 15: 1}
	f.rec.RecordEncodedIn(first, "step", sessions.Observed, f.stamp(), f.value("late first"), tally.Hint{})
	f.rec.RecordEncodedIn(last, "step", sessions.Observed, f.stamp(), f.value("late last"), tally.Hint{})
	if s := f.rec.Stats(); s.Held != 1 || s.Pending != int64(n+1) {
		t.Fatalf("stats %+v: want the first trace's decision forgotten (1 held) and the last's remembered (%d pending)", s, n+1)
	}
}

func (f *fixture) stamp() sessions.Stamp {
	st, _ := f.rec.Stamp(time.Time{})
	return st
}

func (f *fixture) value(name string) []byte {
	v, err := recorder.AppendEncoded(nil, "step", sessions.Stamp{}, &sessions.Record{Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func TestKeepByTraceBudgetEvictsWholeTracesEndedFirst(t *testing.T) {
	probe := newFixture(t, byTrace(0), newOpStore())
	probe.traced(1, "a", sessions.Observed)
	per := int(probe.rec.Stats().HeldBytes) // one trace of one record, its overhead included

	f := newFixture(t, byTrace(2*per+per/2), newOpStore())
	f.traced(1, "a", sessions.Observed) // the oldest, still open
	f.traced(2, "b", sessions.Observed)
	f.rec.EndTrace(trace(2)) // ended: waiting out its grace
	f.traced(3, "c", sessions.Observed)
	if s := f.rec.Stats(); s.TracesEvicted != 1 || s.Evicted != 1 || s.Held != 2 {
		t.Fatalf("stats %+v, want the ended trace b evicted first", s)
	}
	f.traced(4, "d", sessions.Observed)
	if s := f.rec.Stats(); s.TracesEvicted != 2 || s.Held != 2 || s.HeldBytes > int64(2*per+per/2) {
		t.Fatalf("stats %+v, want the oldest open trace a evicted next, within the budget", s)
	}
	// Late spans of an evicted trace are let go; a change still keeps it.
	f.traced(2, "late b", sessions.Observed)
	f.traced(1, "a changed", sessions.Changed)
	f.traced(3, "c changed", sessions.Changed)
	f.flush()
	f.wantSteps("c", "a changed", "c changed")
	if s := f.rec.Stats(); s.Evicted != 3 || s.TracesKept != 2 {
		t.Fatalf("stats %+v, want 3 records evicted and 2 traces kept", s)
	}
}

func TestKeepByTraceRecordsOutsideATraceFollowTheSession(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	f.record("step", "untraced before", sessions.Observed, 0)
	f.traced(1, "dropped", sessions.Observed)
	f.traced(2, "change", sessions.Changed)
	f.record("step", "untraced after", sessions.Observed, 0)
	f.flush()
	f.wantSteps("untraced before", "change", "untraced after")
}

func TestKeepByTraceCloseLetsUndecidedTracesGo(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	f.traced(1, "kept", sessions.Changed)
	f.traced(2, "undecided", sessions.Observed)
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.wantSteps("kept")
	if s := f.rec.Stats(); s.Held != 0 {
		t.Fatalf("stats %+v after Close, want nothing held", s)
	}
}

// Close decides every trace still held, as its grace would have: dropped,
// whether its root ended or not; a root that ended with nothing held is
// no trace. Kept, dropped and evicted then add up to the traces seen
// (issue 33: a server stopped right after its load said 10 kept, 0
// dropped).
func TestKeepByTraceCloseDecidesHeldTraces(t *testing.T) {
	f := newFixture(t, byTrace(0), newOpStore())
	f.traced(1, "kept", sessions.Changed)
	f.traced(2, "ended, in its grace", sessions.Observed)
	f.rec.EndTrace(trace(2))
	f.traced(3, "open", sessions.Observed)
	f.traced(3, "open too", sessions.Observed)
	f.rec.EndTrace(trace(4)) // nothing held
	if s := f.rec.Stats(); s.TracesSeen != 3 || s.TracesKept != 1 || s.TracesDropped != 0 {
		t.Fatalf("stats before Close %+v: want 3 seen, 1 kept, 2 held", s)
	}
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := f.rec.Stats()
	if s.TracesSeen != 3 || s.TracesKept != 1 || s.TracesDropped != 2 || s.TracesEvicted != 0 || s.Held != 0 {
		t.Fatalf("stats after Close %+v: want 3 seen, 1 kept, 2 dropped", s)
	}
	f.wantSteps("kept")
}

// Whatever happens to traces — kept at once or after records held,
// dropped after their grace, evicted by the budget, kept by a late change
// after a drop or an eviction, cut short by Close — kept, dropped and
// evicted add up to the traces seen.
func TestKeepByTraceCountsAddUp(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		f := newFixture(t, byTrace(4<<10), newOpStore())
		for range 2000 {
			tr := byte(1 + rng.IntN(60))
			switch x := rng.IntN(20); {
			case x < 12:
				f.traced(tr, "lookup", sessions.Observed)
			case x < 13:
				f.traced(tr, "compile", sessions.Changed)
			case x < 17:
				f.rec.EndTrace(trace(tr))
			case x < 19:
				f.now = f.now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
				f.rec.DecideTraces()
			default:
				f.now = f.now.Add(time.Duration(rng.IntN(90)) * time.Second) // decisions forgotten
				f.rec.DecideTraces()
			}
			if s := f.rec.Stats(); s.TracesKept+s.TracesDropped+s.TracesEvicted > s.TracesSeen {
				t.Fatalf("seed %d: %+v: more traces decided than seen", seed, s)
			}
		}
		if err := f.rec.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := f.rec.Stats()
		if s.TracesKept+s.TracesDropped+s.TracesEvicted != s.TracesSeen || s.TracesDropped == 0 || s.TracesEvicted == 0 {
			t.Fatalf("seed %d: %d kept + %d dropped + %d evicted, %d seen: want them to add up (and some of each)",
				seed, s.TracesKept, s.TracesDropped, s.TracesEvicted, s.TracesSeen)
		}
	}
}

func TestKeepBySessionIgnoresTraces(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	f.traced(1, "a", sessions.Observed)
	f.rec.EndTrace(trace(1))
	f.traced(2, "b", sessions.Changed)
	f.traced(3, "c", sessions.Observed)
	f.flush()
	f.wantSteps("a", "b", "c")
	if s := f.rec.Stats(); s.TracesKept+s.TracesDropped != 0 {
		t.Fatalf("stats %+v: the session rule counts no traces", s)
	}
}

// Traces whose roots never end here (a leaked span, a root started before
// the exporter) and that change nothing are bounded by the budget: the
// oldest go whole, and what is held always fits.
func TestKeepByTraceFloodOfOpenTracesStaysWithinBudget(t *testing.T) {
	const budget = 64 << 10
	f := newFixture(t, byTrace(budget), newOpStore())
	const n = 50_000
	for i := range n {
		tr := recorder.Trace{0: byte(i >> 16), 1: byte(i >> 8), 2: byte(i), 15: 1}
		if err := f.rec.RecordEncodedIn(tr, "step", sessions.Observed, f.stamp(), f.value("lookup"), tally.Hint{}); err != nil {
			t.Fatal(err)
		}
		if s := f.rec.Stats(); s.HeldBytes > budget {
			t.Fatalf("after %d traces: %d bytes held, over the budget of %d", i+1, s.HeldBytes, budget)
		}
	}
	s := f.rec.Stats()
	if s.Held == 0 || s.TracesEvicted != n-s.Held || s.Evicted != s.TracesEvicted {
		t.Fatalf("stats %+v: want the oldest traces evicted whole and the newest held", s)
	}
	f.flush()
	if f.opens != 0 {
		t.Fatal("traces that changed nothing opened the store")
	}
}

// Many goroutines routing records of many traces while another decides
// and flushes: every record of a trace that changed something is stored,
// and none of a trace that did not.
func TestKeepByTraceConcurrentTraces(t *testing.T) {
	store := newOpStore()
	rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, KeepBy: recorder.KeepByTrace, PendingBudget: 64 << 20},
		func() (sessions.Store, error) { return store, nil }, nil)
	const workers, perWorker = 8, 300
	var routing sync.WaitGroup
	stop := make(chan struct{})
	var deciding sync.WaitGroup
	deciding.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			rec.DecideTraces()
			if err := rec.Flush(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	for w := range workers {
		routing.Go(func() {
			for i := range perWorker {
				tr := recorder.Trace{0: byte(w), 1: byte(i >> 8), 2: byte(i), 15: 1} // never the zero Trace, which is no trace
				changed := i%7 == 0
				for step := range 3 {
					effect := sessions.Observed
					if changed && step == 1 {
						effect = sessions.Changed
					}
					st, _ := rec.Stamp(time.Time{})
					name := fmt.Sprintf("%v/%d/%d", changed, w, i)
					v, err := recorder.AppendEncoded(nil, "step", st, &sessions.Record{Name: name, Effect: effect})
					if err != nil {
						t.Error(err)
						return
					}
					if err := rec.RecordEncodedIn(tr, "step", effect, st, v, tally.Hint{}); err != nil {
						t.Error(err)
						return
					}
				}
				rec.EndTrace(tr)
			}
		})
	}
	routing.Wait()
	close(stop)
	deciding.Wait()
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, n := range names(t, store, "step") {
		counts[n]++
	}
	wantTraces := 0
	for w := range workers {
		for i := 0; i < perWorker; i += 7 {
			wantTraces++
			if n := counts[fmt.Sprintf("true/%d/%d", w, i)]; n != 3 {
				t.Errorf("trace %d/%d changed something: %d of its 3 records stored", w, i, n)
			}
		}
	}
	if len(counts) != wantTraces {
		t.Fatalf("records of %d traces stored, want the %d that changed something", len(counts), wantTraces)
	}
	if s := rec.Stats(); s.TracesKept != int64(wantTraces) {
		t.Fatalf("stats %+v, want %d traces kept", s, wantTraces)
	}
}
