package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestTooLargeRecordsAreDropped records, between ordinary records, one
// record beyond each limit a store or a reader has: larger than
// MaxRecordSize encoded, more attributes than a reader decodes, an array
// attribute longer than a reader decodes, more events, more than a
// reader's decoding budget allows for its bytes. Each is refused
// with ErrTooLarge and counted; the first, a change, still keeps the
// session; and every other record is written at the next flush — none of
// them waits behind a record no store takes.
func TestTooLargeRecordsAreDropped(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	many := make(sessions.Attrs, 1<<17+1)
	for i := range many {
		many[i] = sessions.Attr{Key: fmt.Sprint(i), Value: sessions.BoolValue(true)}
	}
	// Within every count, but past what a reader may allocate for so few
	// bytes: events of many empty arrays.
	var empties sessions.Attrs
	for c := byte('!'); c < 0x7f; c++ {
		empties = append(empties, sessions.Attr{Key: string([]byte{c}), Value: sessions.SliceValue[string](nil)})
	}
	costly := make([]sessions.Event, 40)
	for i := range costly {
		costly[i].Attributes = empties
	}
	tooLarge := []struct {
		name   string
		effect sessions.Effect
		body   sessions.Record
	}{
		{"bytes", sessions.Changed, sessions.Record{Attributes: sessions.Attrs{{Key: "src", Value: sessions.StringValue(strings.Repeat("x", keys.MaxRecordSize))}}}},
		{"attributes", sessions.Observed, sessions.Record{Attributes: many}},
		{"array", sessions.Observed, sessions.Record{Attributes: sessions.Attrs{{Key: "a", Value: sessions.SliceValue(make([]bool, 1<<20+1))}}}},
		{"events", sessions.Observed, sessions.Record{Events: make([]sessions.Event, 1<<20+1)}},
		{"event attributes", sessions.Observed, sessions.Record{Events: []sessions.Event{{Attributes: many}}}},
		{"budget", sessions.Observed, sessions.Record{Events: costly}},
	}
	f.record("compile", "held", sessions.Observed, 0)
	for i, tc := range tooLarge {
		st, _ := f.rec.Stamp(t0)
		tc.body.Name = tc.name
		err := f.rec.Record("compile", tc.effect, st, tc.body)
		if !errors.Is(err, recorder.ErrTooLarge) {
			t.Errorf("%s: Record = %v, want ErrTooLarge", tc.name, err)
		}
		if got := f.rec.Stats().TooLarge; got != int64(i+1) {
			t.Errorf("%s: Stats.TooLarge = %d, want %d", tc.name, got, i+1)
		}
		f.record("compile", "after "+tc.name, sessions.Observed, 0)
	}
	if !f.rec.Kept() {
		t.Fatal("the dropped change did not keep the session")
	}
	if err := f.rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "[held after bytes after attributes after array after events after event attributes after budget]"
	if got := fmt.Sprint(names(t, f.store, "compile")); got != want {
		t.Errorf("written %s, want %s", got, want)
	}
	if st := f.rec.Stats(); st.Pending != 0 || st.WriteErrors != 0 {
		t.Errorf("after the flush: %+v", st)
	}
}

// TestLargestRecordIsKept records a record just within MaxRecordSize: it
// is written, and reads back.
func TestLargestRecordIsKept(t *testing.T) {
	f := newFixture(t, recorder.Config{}, newOpStore())
	st, _ := f.rec.Stamp(t0)
	pad := keys.MaxRecordSize - 200
	body := sessions.Record{Name: "big", Attributes: sessions.Attrs{{Key: "src", Value: sessions.StringValue(strings.Repeat("x", pad))}}}
	if err := f.rec.Record("compile", sessions.Changed, st, body); err != nil {
		t.Fatal(err)
	}
	if err := f.rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for rec, err := range sessions.NewRecords(f.store).All("compile") {
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := rec.Record.Attributes.Get("src"); len(v.AsString()) != pad {
			t.Errorf("read back %d bytes, want %d", len(v.AsString()), pad)
		}
	}
}
