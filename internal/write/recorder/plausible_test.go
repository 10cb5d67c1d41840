package recorder_test

import (
	"math"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// The rules the Importer and records pull share: what a span says of its
// times is taken when both are plausible and it lasts no more than
// MaxSpan; else the plausible one for both; else nothing, for the caller
// to place. Session ids are those a Recorder gives.
func TestSpanTimesAndIDs(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	zero, ancient := time.Unix(0, 0), time.UnixMilli(math.MinInt64)
	for _, c := range []struct {
		name               string
		start, end         time.Time
		wantStart, wantEnd time.Time
		own, found         bool
	}{
		{"own", t0, t0.Add(time.Hour), t0, t0.Add(time.Hour), true, true},
		{"a week", t0, t0.Add(recorder.MaxSpan), t0, t0.Add(recorder.MaxSpan), true, true},
		{"500000h", t0, t0.Add(500000 * time.Hour), t0, t0, false, true},
		{"end before start", t0, t0.Add(-time.Second), t0, t0, false, true},
		{"start at 0", zero, t0, t0, t0, false, true},
		{"start in year -292275055", ancient, t0, t0, t0, false, true},
		{"neither", zero, time.Time{}, time.Time{}, time.Time{}, false, false},
	} {
		s, e, own, found := recorder.SpanTimes(c.start, c.end, recorder.Plausible)
		if !s.Equal(c.wantStart) || !e.Equal(c.wantEnd) || own != c.own || found != c.found {
			t.Errorf("%s: %v %v %t %t; want %v %v %t %t", c.name, s, e, own, found, c.wantStart, c.wantEnd, c.own, c.found)
		}
	}
	for id, want := range map[sessions.SessionID]bool{
		0: false, math.MaxUint64: false, 1 << 63: false, math.MaxInt64: false,
		1: true, sessions.SessionID(t0.UnixNano()): true,
	} {
		if got := recorder.ValidID(id); got != want {
			t.Errorf("ValidID(%d) = %t, want %t", uint64(id), got, want)
		}
	}
}
