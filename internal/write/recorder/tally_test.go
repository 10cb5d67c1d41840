package recorder_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// hit records an observed lookup of key that hit, taking d.
func (f *fixture) hit(key string, d time.Duration, effect sessions.Effect) {
	f.t.Helper()
	st, _ := f.rec.Stamp(time.Time{})
	body := sessions.Record{Name: "lookup", Wall: d, Attributes: sessions.Attrs{
		{Key: "cache.key", Value: sessions.StringValue(key)},
		{Key: "cache.result", Value: sessions.StringValue("hit")},
		{Key: "pad", Value: sessions.StringValue(string(make([]byte, 100)))},
	}}
	if err := f.rec.Record("cache", effect, st, body); err != nil {
		f.t.Fatal(err)
	}
}

func tallyOf(t *testing.T, s sessions.Store, id sessions.SessionID) tallies.Tally {
	t.Helper()
	tl, ok, err := tallies.Read(sessions.NewRecords(s), id)
	if err != nil || !ok {
		t.Fatalf("Tally = %v, %v", ok, err)
	}
	return tl
}

// hits returns the count and hit outcomes of key's entry.
func hits(tl tallies.Tally, key string) (n, hit int64) {
	for _, e := range tl.Entries {
		if v, ok := e.Key.Get("cache.key"); ok && v.AsString() == key {
			n += e.Count
			hit += e.Outcomes["hit"]
		}
	}
	return n, hit
}

// A session kept by its first change has its evicted records tallied:
// kept + tallied = every record, each key's count exact.
func TestTallyCountsWhatTheBudgetEvicted(t *testing.T) {
	f := newFixture(t, recorder.Config{PendingBudget: 2000}, newOpStore())
	const n = 300
	for i := range n {
		f.hit(fmt.Sprint("k", i%7), time.Duration(i+1)*time.Microsecond, sessions.Observed)
	}
	f.hit("k0", time.Millisecond, sessions.Changed)
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _ := f.rec.Session()
	tl := tallyOf(t, f.store, s.ID)
	kept := len(names(t, f.store, "cache"))
	st := f.rec.Stats()
	if int(tl.Count())+kept != n+1 || st.Tallied != tl.Count() || st.Evicted != tl.Count() {
		t.Fatalf("tallied %d + kept %d != %d (Stats %+v)", tl.Count(), kept, n+1, st)
	}
	for k := range 7 {
		c, h := hits(tl, fmt.Sprint("k", k))
		if c == 0 || c != h {
			t.Errorf("k%d: count %d, hits %d", k, c, h)
		}
	}
	e := tl.Entries[0]
	if e.Kind != "cache" || e.Name != "lookup" || e.Min < time.Microsecond || e.Max > n*time.Microsecond || e.Wall < e.Max {
		t.Errorf("entry %+v", e)
	}
}

// A session never kept writes nothing, its tally neither.
func TestTallyOfAWarmRunIsNeverWritten(t *testing.T) {
	f := newFixture(t, recorder.Config{PendingBudget: 2000}, newOpStore())
	for i := range 300 {
		f.hit(fmt.Sprint("k", i%7), time.Microsecond, sessions.Observed)
	}
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.opens != 0 || f.store.Len() != 0 || f.rec.Stats().Tallied == 0 {
		t.Fatalf("a warm run opened %d, wrote %d entries (Stats %+v)", f.opens, f.store.Len(), f.rec.Stats())
	}
}

// A kept session that let nothing go still writes its (empty) part; the
// part is rewritten at most every TallyEvery while the session runs, so
// a crash (no Close) loses at most that.
func TestTallyRewrittenEveryInterval(t *testing.T) {
	f := newFixture(t, recorder.Config{KeepBy: recorder.KeepByTrace}, newOpStore())
	ctx := context.Background()
	f.hit("k0", time.Millisecond, sessions.Changed)
	if err := f.rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := f.rec.Session()
	if tl := tallyOf(t, f.store, s.ID); tl.Count() != 0 {
		t.Fatalf("first tally %+v, want empty", tl)
	}
	request := func(i int) {
		var tr recorder.Trace
		tr[0], tr[1] = byte(i>>8), byte(i)+1
		st, _ := f.rec.Stamp(time.Time{})
		v, err := recorder.AppendEncoded(nil, "cache", st, &sessions.Record{Name: "lookup", Wall: time.Millisecond,
			Attributes: sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue("k1")}, {Key: "cache.result", Value: sessions.StringValue("hit")}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.rec.RecordEncodedIn(tr, "cache", sessions.Observed, st, v, tally.Hint{}); err != nil {
			t.Fatal(err)
		}
		f.rec.EndTrace(tr)
	}
	for i := range 10 {
		request(i)
	}
	f.now = f.now.Add(recorder.TraceGrace)
	f.rec.DecideTraces()
	if err := f.rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if tl := tallyOf(t, f.store, s.ID); tl.Count() != 0 {
		t.Fatalf("tally rewritten before TallyEvery: %+v", tl)
	}
	f.now = f.now.Add(recorder.DefaultTallyEvery)
	if err := f.rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, h := hits(tallyOf(t, f.store, s.ID), "k1"); n != 10 || h != 10 {
		t.Fatalf("after TallyEvery k1 counted %d, %d hits; want 10", n, h)
	}
	// Five more, and the process dies: at most the interval is lost.
	for i := 10; i < 15; i++ {
		request(i)
	}
	f.now = f.now.Add(recorder.TraceGrace)
	f.rec.DecideTraces()
	if err := f.rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := hits(tallyOf(t, f.store, s.ID), "k1"); n != 10 {
		t.Fatalf("k1 counted %d within the interval, want 10 still", n)
	}
	if err := f.rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := hits(tallyOf(t, f.store, s.ID), "k1"); n != 15 {
		t.Fatalf("k1 counted %d after Close, want 15", n)
	}
}

// A resumed session writes a part of its own: the sum counts both.
func TestTallyOfAResumedSessionIsANewPart(t *testing.T) {
	store := newOpStore()
	ctx := context.Background()
	f := newFixture(t, recorder.Config{PendingBudget: 1000}, store)
	for range 50 {
		f.hit("k", time.Microsecond, sessions.Observed)
	}
	f.hit("k", time.Microsecond, sessions.Changed)
	if err := f.rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	first := f.rec.Stats().Tallied
	s, _ := f.rec.Session()
	g := newFixture(t, recorder.Config{PendingBudget: 1000, KeepBy: recorder.KeepByTrace,
		Resume: &recorder.Resume{ID: s.ID, Start: t0, NextSeq: f.rec.NextSeq()}}, store)
	for i := range 20 {
		var tr recorder.Trace
		tr[0] = byte(i + 1)
		st, _ := g.rec.Stamp(time.Time{})
		v, _ := recorder.AppendEncoded(nil, "cache", st, &sessions.Record{Name: "lookup", Attributes: sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue("k")}}})
		if err := g.rec.RecordEncodedIn(tr, "cache", sessions.Observed, st, v, tally.Hint{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := hits(tallyOf(t, store, s.ID), "k"); first == 0 || n != first+20 {
		t.Fatalf("k counted %d over both parts, want %d + 20", n, first)
	}
}

// A record let go before it reached the Recorder (an Importer's bound
// lets a waiting span go) is tallied from its encoding, unstamped, as a
// held record pushed out is; one of an invalid kind, or given after
// Close, is not.
func TestTallyRecordCountsARecordLetGoBeforeIt(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	body := sessions.Record{Name: "lookup", Wall: time.Millisecond, Attributes: sessions.Attrs{
		{Key: "cache.key", Value: sessions.StringValue("k9")},
		{Key: "result", Value: sessions.StringValue("hit")},
	}}
	v, err := recorder.AppendEncoded(nil, "cache", sessions.Stamp{}, &body)
	if err != nil {
		t.Fatal(err)
	}
	f.rec.TallyRecord("/cache/", v)
	f.rec.TallyRecord("", v)
	f.hit("k0", time.Millisecond, sessions.Changed)
	if err := f.rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.rec.TallyRecord("cache", v)
	s, _ := f.rec.Session()
	tl := tallyOf(t, f.store, s.ID)
	if c, h := hits(tl, "k9"); c != 1 || h != 1 || tl.Count() != 1 || f.rec.Stats().Tallied != 1 {
		t.Fatalf("k9 tallied %d times, %d hits; %d in all, Stats.Tallied %d: want 1 of each", c, h, tl.Count(), f.rec.Stats().Tallied)
	}
	if e := tl.Entries[0]; e.Kind != "cache" || e.Name != "lookup" || e.Wall != time.Millisecond {
		t.Errorf("tallied as %+v", e)
	}
}

// TestHeldRecordsAreTalliedFromTheirHint: a record held, then let go — by
// the budget outside any trace, or with its trace after its grace — is
// counted from the hint it was routed with. The hint here is true to the
// value's shape but names the record by the value of its attribute
// "name", which follows a key "name" as the record's name does, so that
// the tally shows which it was read from.
func TestHeldRecordsAreTalliedFromTheirHint(t *testing.T) {
	v, err := recorder.AppendEncoded(nil, "cache", sessions.Stamp{Session: 1, Seq: 1}, &sessions.Record{
		Name: "lookup", Wall: time.Millisecond,
		Attributes: sessions.Attrs{{Key: "name", Value: sessions.StringValue("internal")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	nameAt := bytes.Index(v, append([]byte{0x64, 'n', 'a', 'm', 'e', 0x60 | 8}, "internal"...)) + 5
	wallAt := bytes.Index(v, []byte{0x1a, 0x00, 0x0f, 0x42, 0x40}) // 1,000,000 ns
	if nameAt < 5 || wallAt < 0 {
		t.Fatalf("the attribute name at %d, wall_ns at %d in %x", nameAt, wallAt, v)
	}
	hint := tally.Hint{Name: uint32(nameAt), Wall: uint32(wallAt)}
	for _, c := range []struct {
		name string
		cfg  recorder.Config
	}{
		{"budget", recorder.Config{PendingBudget: 3 * len(v)}},
		{"trace", byTrace(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.cfg, newOpStore())
			for i := range 10 {
				var tr recorder.Trace
				if c.cfg.KeepBy == recorder.KeepByTrace {
					tr[0] = byte(i + 1)
				}
				if err := f.rec.RecordEncodedIn(tr, "cache", sessions.Observed, f.stamp(), v, hint); err != nil {
					t.Fatal(err)
				}
				f.rec.EndTrace(tr)
			}
			f.now = f.now.Add(recorder.TraceGrace)
			f.rec.DecideTraces()
			f.hit("k0", time.Millisecond, sessions.Changed)
			if err := f.rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			s, _ := f.rec.Session()
			var named, other int64
			for _, e := range tallyOf(t, f.store, s.ID).Entries {
				if e.Name == "internal" && e.Wall == time.Duration(e.Count)*time.Millisecond {
					named += e.Count
				} else {
					other += e.Count
				}
			}
			if named < 7 || other != 0 {
				t.Fatalf("%d records tallied from the hint, %d otherwise; want every one let go (7 or more) from it", named, other)
			}
		})
	}
}
