package recorder_test

import (
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// Spans starting before 1970 or past 2262 (UnixNano overflows) are
// stamped at the clock's reading: the session's id is the clock's, sane
// and distinct for each such session, never an overflowed one that sorts
// as newest nor the 1 every pre-1970 start used to share; and an odd
// time in a running session gives an offset from the clock, not a
// saturated or wrapped one.
func TestOddStartsStampAtTheClock(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	odd := testsupport.OddStarts
	var ids recorder.IDs
	seen := map[sessions.SessionID]bool{}
	for _, at := range odd {
		if recorder.Sane(at) {
			t.Fatalf("Sane(%v) = true", at)
		}
		rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, IDs: &ids}, nil, func() time.Time { return now })
		first, _ := rec.Stamp(at)
		lag := now.UnixNano() - int64(first.Session)
		if lag < 0 || lag >= 1<<recorder.IDRandomBits || seen[first.Session] {
			t.Fatalf("start %v: id %d, want a fresh one within 2^%d ns before the clock's %d", at, first.Session, recorder.IDRandomBits, now.UnixNano())
		}
		seen[first.Session] = true
		if first.Offset != time.Duration(lag) {
			t.Fatalf("start %v: first offset %v, want %v", at, first.Offset, time.Duration(lag))
		}
		// The same odd time later in a session started on a sane clock.
		sane := recorder.New(recorder.Config{Level: sessions.LevelBasic}, nil, func() time.Time { return now.Add(time.Second) })
		sane.Stamp(now)
		later, _ := sane.Stamp(at)
		if later.Offset != time.Second {
			t.Fatalf("odd stamp %v in a running session: offset %v, want 1s (the clock's reading)", at, later.Offset)
		}
	}
	for _, at := range []time.Time{time.Unix(0, 0), now, time.Date(2262, 4, 11, 0, 0, 0, 0, time.UTC)} {
		if !recorder.Sane(at) {
			t.Fatalf("Sane(%v) = false", at)
		}
	}
}
