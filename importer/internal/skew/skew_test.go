package skew

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
)

// slowUsual is Times's common case as time.Time's comparisons decide
// it: what usual must never contradict.
func slowUsual(start, end, recv time.Time) bool {
	latest, earliest := recv.Add(Ahead), recv.Add(-MaxSpanAge)
	return within(start, earliest, latest) && within(end, earliest, latest) &&
		!end.Before(start) && end.Sub(start) <= recorder.MaxSpan
}

// TestUsualAgreesWithTimeComparisons checks the integer fast path against
// the comparisons it replaces, on times a sender gives and an adversary
// picks: around the window's edges to the nanosecond, zero, before 1970,
// year 1000 and 3000 (whose Unix nanoseconds overflow and could wrap into
// the window), and a recv near the ends of time. usual may leave a case to
// the comparisons (false), never decide one they would not.
func TestUsualAgreesWithTimeComparisons(t *testing.T) {
	now := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	recvs := []time.Time{now, now.Add(time.Nanosecond), time.Unix(0, 0), time.Unix(int64(MaxSpanAge/time.Second), 0),
		time.Unix(int64(MaxSpanAge/time.Second)+3, 0), time.Unix(0, math.MaxInt64), time.Unix(0, math.MaxInt64).Add(-time.Minute),
		time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}
	edges := func(recv time.Time) []time.Time {
		var ts []time.Time
		for _, at := range []time.Time{recv, recv.Add(Ahead), recv.Add(-MaxSpanAge)} {
			for _, d := range []time.Duration{-time.Second, -1, 0, 1, time.Second} {
				ts = append(ts, at.Add(d))
			}
		}
		// Times whose Unix nanoseconds overflow: wrapped, some land near recv.
		wrap := time.Unix(0, recv.UnixNano()).Add(time.Duration(math.MaxInt64)).Add(time.Duration(math.MaxInt64)).Add(2)
		return append(ts, time.Time{}, time.Unix(0, 0), time.Unix(-1, 0), wrap, recv.AddDate(-1026, 0, 0), recv.AddDate(974, 0, 0),
			time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for _, recv := range recvs {
		ts := edges(recv)
		for range 200 {
			ts = append(ts, recv.Add(time.Duration(rng.Int64N(int64(2*MaxSpanAge)))-MaxSpanAge-time.Hour))
		}
		for _, s := range ts {
			for _, e := range ts {
				got, want := usual(s, e, recv), slowUsual(s, e, recv)
				if got && !want {
					t.Fatalf("usual(%v, %v, recv %v) = true; the comparisons say the times are not the span's own", s, e, recv)
				}
				if recv.Equal(now) && got != want {
					t.Fatalf("usual(%v, %v, recv %v) = %v, want %v: a common recv must be decided here", s, e, recv, got, want)
				}
				if got {
					fast++
				}
			}
		}
	}
	if fast == 0 {
		t.Fatal("usual decided no case")
	}
}

// BenchmarkTimes is Times on a span of the common case: the cost every
// imported span pays.
func BenchmarkTimes(b *testing.B) {
	recv := time.Now()
	start, end := recv.Add(-3*time.Millisecond), recv.Add(-time.Millisecond)
	var c Clock
	for b.Loop() {
		c.Times(start, end, recv)
	}
}
