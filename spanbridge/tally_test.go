package spanbridge_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// A part of a tally goes out as a span and comes back as it was; each
// version of a part is a span of its own in the part's trace; a span
// that is no tally's, or that names another session or part, does not
// come back as one.
func TestTallySpanRoundTrip(t *testing.T) {
	id := sessions.SessionID(time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC).UnixNano())
	e := tallies.Entry{Kind: "cache", Name: "lookup", Key: sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue("k1")}}}
	e.Add(3*time.Microsecond, "hit")
	tl := tallies.Tally{Session: id, Part: 1<<63 + 5, Entries: []tallies.Entry{e}}
	res := spanbridge.Resource(sessions.Session{ID: id})
	s, err := spanbridge.TallySpan(res, tl)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != spanbridge.TallyName || !s.StartTime().Equal(sessions.Session{ID: id}.Started()) || s.Resource() != res {
		t.Errorf("span %q at %v: want %q at the session's start, under its Resource", s.Name(), s.StartTime(), spanbridge.TallyName)
	}
	if !spanbridge.IsTallySpan(s.Name(), s.Attributes()) {
		t.Error("IsTallySpan: false for a tally's span")
	}
	back, v, err := spanbridge.FromTallySpan(id, s.Name(), s.Attributes())
	if err != nil || !reflect.DeepEqual(back, tl) {
		t.Fatalf("back: %+v, %v; want %+v", back, err, tl)
	}
	if want, _ := tl.MarshalCBOR(); string(v) != string(want) {
		t.Errorf("value %x, want %x", v, want)
	}
	e.Add(time.Microsecond, "hit")
	later, err := spanbridge.TallySpan(res, tallies.Tally{Session: id, Part: tl.Part, Entries: []tallies.Entry{e}})
	if err != nil {
		t.Fatal(err)
	}
	if later.SpanContext().TraceID() != s.SpanContext().TraceID() || later.SpanContext().SpanID() == s.SpanContext().SpanID() {
		t.Errorf("a later version: trace %v span %v; want the same trace, another span than %v", later.SpanContext().TraceID(), later.SpanContext().SpanID(), s.SpanContext().SpanID())
	}
	if _, _, err := spanbridge.FromTallySpan(id+1, s.Name(), s.Attributes()); err == nil || errors.Is(err, spanbridge.ErrNotTally) {
		t.Errorf("under another session: %v; want an error", err)
	}
	wrongPart := append([]attribute.KeyValue(nil), s.Attributes()...)
	for i := range wrongPart {
		if wrongPart[i].Key == spanbridge.TallyPartKey {
			wrongPart[i] = spanbridge.TallyPartKey.String("2")
		}
	}
	if _, _, err := spanbridge.FromTallySpan(id, s.Name(), wrongPart); err == nil || errors.Is(err, spanbridge.ErrNotTally) {
		t.Errorf("with another part: %v; want an error", err)
	}
	if _, _, err := spanbridge.FromTallySpan(id, "GET /", s.Attributes()); !errors.Is(err, spanbridge.ErrNotTally) {
		t.Errorf("another span: %v; want ErrNotTally", err)
	}
	if spanbridge.IsTallySpan(spanbridge.TallyName, nil) {
		t.Error("IsTallySpan: true for a span without records.tally")
	}
}
