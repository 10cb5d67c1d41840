package importer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// A session not kept yet whose spans wait for a parent that has not come,
// past a small HeldBytes: the bound lets the oldest go, and the tally the
// session writes once kept counts each of them once, as what it would
// have been — a lookup by its key and outcome, an implicit mark by its
// name — though they are sent again and their parent comes after: with
// the records stored, exactly every span given.
func TestImportBoundTalliesTheSpansItLetsGo(t *testing.T) {
	r := newImportRig(t, Config{HeldBytes: 16 << 10})
	const n = 120 // half lookups (observed records), half implicit marks
	var spans []Span
	for i := range n {
		s := span("compute", byte(i+2), 1, i)
		if i%2 == 0 {
			s = span("lookup", byte(i+2), 1, i, spanbridge.Kind("cache"), spanbridge.Observed(),
				attribute.String("cache.key", fmt.Sprint("k", i%3)), attribute.String("result", "hit"))
		}
		spans = append(spans, s)
	}
	for i := 0; i < n; i += 10 {
		r.send(node, spans[i:i+10]...)
	}
	evicted := r.im.Stats().Evicted
	if evicted == 0 {
		t.Fatalf("nothing evicted past HeldBytes: %+v", r.im.Stats())
	}
	// Sent again, the spans let go are taken once; then their parent
	// comes, and a change keeps the session.
	r.send(node, spans...)
	r.send(node, span("GET /work", 1, 0, 0))
	fill := span("fill", 1, 0, n, changed("cache")...)
	fill.TraceID = [16]byte{2}
	r.send(node, fill)
	r.clock.Advance(time.Second) // the marks' grace passes: the policy lets them go
	r.im.tick()
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	for _, rec := range r.records() {
		stored[rec.Record.Name]++
	}
	tl := r.onlyTally()
	tallied := map[string]int64{}
	var all int64
	for _, e := range tl.Entries {
		all += e.Count
		tallied[e.Kind+" "+e.Name] += e.Count
		if e.Kind == "cache" {
			if _, keyed := e.Key.Get("cache.key"); !keyed || e.Outcomes["hit"] != e.Count || e.Wall == 0 {
				t.Errorf("lookups tallied as %+v: want each by its key, a hit, with its time", e)
			}
		}
	}
	st := r.im.Stats()
	t.Logf("evicted %d before the change; stored %v, tallied %v", evicted, stored, tallied)
	if got := stored["lookup"] + tallied["cache lookup"]; got != n/2 {
		t.Errorf("%d lookups stored, %d tallied: %d, want the %d given", stored["lookup"], tallied["cache lookup"], got, n/2)
	}
	if got := stored["compute"] + tallied[sessions.MarksKind+" compute"]; got != n/2 {
		t.Errorf("%d compute marks stored, %d tallied: %d, want the %d given", stored["compute"], tallied[sessions.MarksKind+" compute"], got, n/2)
	}
	if st.Tallied != all || st.Tallied < st.Evicted {
		t.Errorf("Stats.Tallied %d, the tally counts %d: want them equal, and every one of the %d evicted among them", st.Tallied, all, st.Evicted)
	}
}

// onlyTally returns the tally of the one session stored.
func (r *importRig) onlyTally() tallies.Tally {
	r.t.Helper()
	rows := r.rows()
	if len(rows) != 1 {
		r.t.Fatalf("%d sessions, want 1", len(rows))
	}
	tl, ok, err := tallies.Read(sessions.NewRecords(r.store), rows[0].ID)
	if err != nil || !ok {
		r.t.Fatalf("Tally: %v, %v", ok, err)
	}
	return tl
}

// A span whose records.effect is given twice, observed then changed, is
// a changed one to the Importer as to the record it maps to (the last
// one speaks: intake.Speaks, spanbridge's mapping): while it waits for
// its parent it keeps its session, so the bound lets none of the
// session's spans go, and its record is stored, changed, and not in the
// tally, which counts only records that changed nothing (docs/FORMAT.md
// §3.6). tallyDropped tallies no changed record all the same, should one
// ever reach it.
func TestImportAChangeSaidLastKeepsItsSession(t *testing.T) {
	r := newImportRig(t, Config{HeldBytes: 16 << 10})
	for i := 0; i < 120; i += 10 {
		var spans []Span
		for j := i; j < i+10; j++ {
			effect := []attribute.KeyValue{spanbridge.Observed()}
			if j == 0 { // the oldest, let go first
				effect = append(effect, spanbridge.Changed())
			}
			spans = append(spans, span("lookup", byte(j+2), 1, j, append(effect, spanbridge.Kind("cache"),
				attribute.String("cache.key", fmt.Sprint("k", j)), attribute.String("result", "hit"))...))
		}
		r.send(node, spans...)
	}
	if st := r.im.Stats(); st.Evicted != 0 || st.SessionsKept != 1 {
		t.Fatalf("the change did not keep the session, or the bound let spans go: %+v", st)
	}
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, rec := range r.records() {
		if k, _ := rec.Record.Attributes.Get("cache.key"); k.String() == "k0" {
			stored++
			if rec.Record.Effect != sessions.Changed {
				t.Errorf("k0's record is %v, want changed", rec.Record.Effect)
			}
		}
	}
	if stored != 1 {
		t.Errorf("k0's record stored %d times, want once", stored)
	}
	for _, e := range r.onlyTally().Entries {
		if k, _ := e.Key.Get("cache.key"); k.String() == "k0" {
			t.Errorf("a changed record tallied as a hit let go: %+v", e)
		}
	}
}
