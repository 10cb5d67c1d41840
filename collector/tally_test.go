package collector

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.uber.org/zap"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// handMadeTally is a part of a tally of session id: hits hits of one
// key, and a rest.
func handMadeTally(id sessions.SessionID, part uint64, hits int) tallies.Tally {
	e := tallies.Entry{Kind: "cache", Name: "lookup", Key: sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue("k1")}}}
	for i := range hits {
		e.Add(time.Duration(i+1)*time.Microsecond, "hit")
	}
	rest := tallies.Entry{Kind: "cache", Rest: true}
	rest.Add(time.Millisecond, "")
	return tallies.Tally{Session: id, Part: part, Entries: []tallies.Entry{e, rest}, Over: 1}
}

// tallyEntries is what a Recorder of the processor writes of a kept
// session: its row, a changed record, and parts of its tally, as
// entries.
func tallyEntries(t *testing.T, id sessions.SessionID, parts ...tallies.Tally) []sessions.Entry {
	t.Helper()
	mem := sessions.NewMemStore()
	r := sessions.NewRecords(mem)
	row := sessions.Session{ID: id, StartedUnixMs: sessions.Session{ID: id}.Started().UnixMilli(), Label: "server", Process: 7,
		Resource: sessions.Attrs{{Key: "service.name", Value: sessions.StringValue("cacheserver")}}}
	rec := sessions.KindRecord{Kind: "cache", Stamped: sessions.Stamped[sessions.Record]{
		Stamp:  sessions.Stamp{Session: id, Seq: 0, Offset: time.Millisecond},
		Record: sessions.Record{Name: "lookup", Wall: time.Millisecond, Effect: sessions.Changed, TraceID: sessions.TraceID{1, 15: 1}, SpanID: sessions.SpanID{7: 1}},
	}}
	if err := r.Put([]sessions.Session{row}, []sessions.KindRecord{rec}); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if err := tallies.Put(r, p); err != nil {
			t.Fatal(err)
		}
	}
	// The row first, as a Recorder writes it when it keeps a session;
	// the tally after the record.
	var rows, rest []sessions.Entry
	for e, err := range mem.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		c := sessions.Entry{Key: append([]byte(nil), e.Key...), Value: append([]byte(nil), e.Value...)}
		if _, _, row, err := sessions.DecodeEntry(c); err == nil && row.ID == id {
			rows = append(rows, c)
		} else {
			rest = append(rest, c)
		}
	}
	return append(rows, rest...)
}

// The processor hands a part of a tally on as a span of its own under
// the session's Resource, which an Importer downstream (the records
// exporter) takes back as the part it was, under the session it
// records: not a record. A later version of a part replaces it; an
// older one, coming late, does not.
func TestTallyHandedOnAndTakenBack(t *testing.T) {
	id := sessions.SessionID(time.Now().Add(-time.Minute).UnixNano())
	p1, p2 := handMadeTally(id, 1, 3), handMadeTally(id, 99, 5)
	sink := new(consumertest.TracesSink)
	f := &forwarder{next: sink, logger: zap.NewNop()}
	if err := f.forward(tallyEntries(t, id, p1, p2)); err != nil {
		t.Fatal(err)
	}
	// A later version of part 1, then the first again, late.
	newer := handMadeTally(id, 1, 4)
	for _, p := range []tallies.Tally{newer, p1} {
		if err := f.forward(tallyEntries(t, id, p)[2:]); err != nil { // the tally alone
			t.Fatal(err)
		}
	}

	// In pdata: a span per part and version, under the session's Resource,
	// that carries the part as it was.
	got := map[uint64][]tallies.Tally{}
	records := 0
	for _, td := range sink.AllTraces() {
		c := batches(td)
		for _, b := range c.batches {
			s, row, err := spanbridge.FromResource(b.Resource)
			if err != nil || !row || s.ID != id || s.Label != "server" {
				t.Fatalf("a Resource of %v, row %v, %v: want the session's row", s, row, err)
			}
			for _, sp := range b.Spans {
				if sp.Name != spanbridge.TallyName {
					records++
					continue
				}
				tl, _, err := spanbridge.FromTallySpan(s.ID, sp.Name, sp.Attributes)
				if err != nil {
					t.Fatal(err)
				}
				if !sp.Start.Equal(sessions.Session{ID: id}.Started()) || !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
					t.Errorf("a tally's span at %v (%v, %v): want the session's start and valid ids", sp.Start, sp.TraceID, sp.SpanID)
				}
				got[tl.Part] = append(got[tl.Part], tl)
			}
		}
		c.release()
	}
	if records != 1 {
		t.Errorf("%d records handed on, want 1", records)
	}
	if want := map[uint64][]tallies.Tally{1: {p1, newer, p1}, 99: {p2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tallies handed on:\n%+v\nwant\n%+v", got, want)
	}

	// Into the records exporter: the records of the session, and its
	// tally, the sum of the newest version of each part.
	r := export(t, func(*Config) {}, sink.AllTraces()...)
	var ids []sessions.SessionID
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 1 {
		t.Fatalf("sessions %v, want 1", ids)
	}
	sum, ok, err := tallies.Read(r, ids[0])
	if err != nil || !ok {
		t.Fatalf("no tally of the exporter's session (%v)", err)
	}
	want := tallies.Tally{Session: ids[0]}
	want.Merge(newer)
	want.Merge(p2)
	want.Part = 0
	if !reflect.DeepEqual(sum, want) {
		t.Errorf("the exporter's tally:\n%+v\nwant\n%+v", sum, want)
	}
	parts := 0
	for p, err := range tallies.Parts(r, ids[0]) {
		if err != nil {
			t.Fatal(err)
		}
		if p.Part == 1 || p.Part == 99 {
			t.Errorf("part %d written as the sender's: want one drawn from the sender's session and part", p.Part)
		}
		if p.Count() > 0 { // the exporter's own part counts nothing here
			parts++
		}
	}
	if parts != 2 {
		t.Errorf("%d parts that count, want 2", parts)
	}
	if n := len(testRecords(t, r)); n != 1 {
		t.Errorf("%d records, want 1: a tally is no record", n)
	}
}

// testRecords returns every record of r.
func testRecords(t *testing.T, r *sessions.Records) []sessions.KindRecord {
	t.Helper()
	kinds, err := r.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	var out []sessions.KindRecord
	for kr, err := range r.InStampOrder(kinds) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, kr)
	}
	return out
}

// A processor downstream of another hands a tally it is sent on again,
// under the session it records the sender in: each version that counts
// more than the last of its part, not the one that came late.
func TestTallyThroughTwoProcessors(t *testing.T) {
	id := sessions.SessionID(time.Now().Add(-time.Minute).UnixNano())
	p1, newer := handMadeTally(id, 1, 3), handMadeTally(id, 1, 4)
	up := new(consumertest.TracesSink)
	f := &forwarder{next: up, logger: zap.NewNop()}
	for i, p := range []tallies.Tally{p1, newer, p1} {
		es := tallyEntries(t, id, p)
		if i > 0 {
			es = es[2:]
		}
		if err := f.forward(es); err != nil {
			t.Fatal(err)
		}
	}
	down := runProcessor(t, NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig), up.AllTraces()...)
	var counts []int64
	var session sessions.SessionID
	for _, td := range down.AllTraces() {
		c := batches(td)
		for _, b := range c.batches {
			s, _, err := spanbridge.FromResource(b.Resource)
			if err != nil {
				t.Fatal(err)
			}
			for _, sp := range b.Spans {
				if sp.Name != spanbridge.TallyName {
					continue
				}
				tl, _, err := spanbridge.FromTallySpan(s.ID, sp.Name, sp.Attributes)
				if err != nil {
					t.Fatal(err)
				}
				if tl.Count() == 0 {
					continue // the downstream processor's own part, which counts nothing here
				}
				if tl.Part == 1 || s.ID == id {
					t.Errorf("handed on as session %d part %d: want the processor's session, and a part drawn from the sender's", s.ID, tl.Part)
				}
				session = s.ID
				counts = append(counts, tl.Count())
			}
		}
		c.release()
	}
	if !slices.Equal(counts, []int64{p1.Count(), newer.Count()}) || session == 0 {
		t.Errorf("tallies handed on counting %v, want %v then %v", counts, p1.Count(), newer.Count())
	}
}
