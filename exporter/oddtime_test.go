package exporter_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Sessions whose first spans start in years 1000, 1600, 1950, 1969, 2262
// (after April 11) and 3000 get sane ids from the clock, distinct and in the order they
// started; each record keeps its span's own start in SpanStartKey, and
// offsets stay small. Before, year 1000 and 1600 overflowed UnixNano into
// ids that sorted as newest, and 1950 and 1969 shared id 1.
func TestOddStartsGetSaneIDs(t *testing.T) {
	mem := sessions.NewMemStore()
	shared := nopClose{mem}
	odd := testsupport.OddStarts
	before := time.Now()
	for _, at := range odd {
		p := newProvider(t, "", exporter.WithStore(shared), exporter.WithLabel(at.Format("2006")))
		_, s := p.tr.Start(context.Background(), "old", trace.WithTimestamp(at),
			trace.WithAttributes(spanbridge.Kind("phase"), spanbridge.Changed()))
		s.End(trace.WithTimestamp(at.Add(time.Millisecond)))
		p.shutdown(t)
	}
	r := sessions.NewRecords(mem.Reopen())
	ss := countSessions(t, r)
	var labels []string
	for _, s := range ss {
		labels = append(labels, s.Label)
		if s.Started().Before(before.Add(-time.Second)) || s.Started().After(time.Now()) {
			t.Errorf("session %q started %v: not the clock's reading", s.Label, s.Started())
		}
	}
	if !slices.Equal(labels, []string{"1000", "1600", "1950", "1969", "2262", "3000"}) {
		t.Fatalf("sessions in id order = %q, want the order they were written", labels)
	}
	i := 0
	for rec, err := range r.All("phase") {
		if err != nil {
			t.Fatal(err)
		}
		v, ok := rec.Record.Attributes.Get(exporter.SpanStartKey)
		if want := odd[i].Format(time.RFC3339Nano); !ok || v.String() != want {
			t.Errorf("record %d: %s = %v, want %s", i, exporter.SpanStartKey, v, want)
		}
		if rec.Stamp.Offset < 0 || rec.Stamp.Offset > time.Second || rec.Record.Wall != time.Millisecond {
			t.Errorf("record %d: offset %v, wall %v", i, rec.Stamp.Offset, rec.Record.Wall)
		}
		i++
	}
	if i != len(odd) {
		t.Fatalf("%d records, want %d", i, len(odd))
	}
}

// Sessions that began with a year-1000 and a year-1600 span, then four
// ordinary ones: prune --keep 2 keeps the two started last. Before, the
// odd ones overflowed into the newest ids, and the prune kept them and
// deleted the four real sessions.
func TestPruneKeepsTheNewestAfterOddStarts(t *testing.T) {
	mem := sessions.NewMemStore()
	shared := nopClose{mem}
	write := func(label string, at time.Time) {
		p := newProvider(t, "", exporter.WithStore(shared), exporter.WithLabel(label))
		opts := []trace.SpanStartOption{trace.WithAttributes(spanbridge.Kind("phase"), spanbridge.Changed())}
		if !at.IsZero() {
			opts = append(opts, trace.WithTimestamp(at))
		}
		_, s := p.tr.Start(context.Background(), "work", opts...)
		s.End()
		p.shutdown(t)
	}
	write("1000", testsupport.OddStarts[0])
	write("1600", testsupport.OddStarts[1])
	for _, l := range []string{"a", "b", "c", "d"} {
		write(l, time.Time{})
	}
	if _, err := sessions.NewRecords(mem).Prune(2); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range countSessions(t, sessions.NewRecords(mem)) {
		labels = append(labels, s.Label)
	}
	if !slices.Equal(labels, []string{"c", "d"}) {
		t.Fatalf("after prune --keep 2: %q, want [c d]", labels)
	}
}
