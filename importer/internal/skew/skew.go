// Package skew reads a sender's clock against a gateway's. A gateway
// receives spans from many machines, and their clocks disagree: one runs
// an hour ahead, one was never set (1970), one SDK sends 0 for a time it
// cannot hold (year 3000), one span ends before it starts. Trusted as
// they come, they date sessions in 1970, let `prune --keep` delete the
// sessions sent last, and give records negative or 56-year durations. So
// the Importer reads each sender's clock against its own, once per
// session, and places the session on the gateway's clock; within a
// session, times keep the sender's own spacing (offsets and durations are
// differences on one clock, which a skew does not change).
package skew

import (
	"math"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
)

// The bounds within which a sender's clock is taken as it is (the
// Importer's ClockAhead, ClockBehind and MaxSpanAge, documented there).
const (
	Ahead      = 5 * time.Second
	Behind     = 2 * time.Minute
	MaxSpanAge = 7 * 24 * time.Hour
)

// Clock maps a sender's clock onto the gateway's: Skew is added to every
// time the sender gives.
type Clock struct {
	Skew time.Duration
}

// Measure reads a sender's clock from the first batch of its session (n
// spans, the ith ending at end(i)), received at recv: if the latest plausible end lies within
// Behind before recv and Ahead after it, the clock is taken as it is;
// otherwise the batch's latest end is taken as the moment it was sent. A
// sender that says it is a recorded session (replayed: `records replay`
// sending a stored session again) keeps its own times, which are the
// session's.
func Measure(n int, end func(i int) time.Time, recv time.Time, replayed bool) Clock {
	if replayed {
		return Clock{}
	}
	var latest time.Time
	for i := range n {
		if e := end(i); recorder.Plausible(e) && e.After(latest) {
			latest = e
		}
	}
	if latest.IsZero() {
		return Clock{} // no time to read: each span is placed on its own (Times)
	}
	if d := recv.Sub(latest); d <= Behind && d >= -Ahead {
		return Clock{}
	}
	return Clock{Skew: recv.Sub(latest)}
}

// Times returns a span's start and end on the gateway's clock, and
// whether either was taken from elsewhere than the span itself: a time
// that is zero or not sane, an end before the start, a time Ahead past
// recv (the span's arrival) or a start MaxSpanAge before it (the rules of
// recorder.SpanTimes, within that window). An implausible start becomes
// the end (or the reverse), and a span with no plausible time at all is
// placed at recv with no duration: no record lasts 56 years or less than
// nothing.
func (c Clock) Times(spanStart, spanEnd, recv time.Time) (start, end time.Time, odd bool) {
	// It runs for every span: a clock without skew (most senders) and
	// times within the window (most spans) cost a few integer
	// comparisons.
	if c.Skew == 0 && usual(spanStart, spanEnd, recv) {
		return spanStart, spanEnd, false // most spans: SpanTimes's first case, without its calls
	}
	latest, earliest := recv.Add(Ahead), recv.Add(-MaxSpanAge)
	if c.Skew == 0 && within(spanStart, earliest, latest) && within(spanEnd, earliest, latest) &&
		!spanEnd.Before(spanStart) && spanEnd.Sub(spanStart) <= recorder.MaxSpan {
		return spanStart, spanEnd, false // what usual leaves to this: recv near the ends of time
	}
	plausible := func(t time.Time) bool {
		if !recorder.Plausible(t) {
			return false
		}
		g := c.On(t)
		return !g.After(latest) && !g.Before(earliest)
	}
	start, end, own, found := recorder.SpanTimes(spanStart, spanEnd, plausible)
	if !found {
		return recv, recv, true
	}
	return c.On(start), c.On(end), !own
}

// On returns t, a time on the sender's clock, on the gateway's.
func (c Clock) On(t time.Time) time.Time {
	if c.Skew == 0 {
		return t
	}
	return t.Add(c.Skew)
}

// within reports whether t, on the gateway's clock, is plausible and
// within [earliest, latest].
func within(t, earliest, latest time.Time) bool {
	return recorder.Plausible(t) && !t.After(latest) && !t.Before(earliest)
}

// The seconds within which usual decides for recv: far enough from the
// ends of what a session can hold (1970, and 2262 where Unix nanoseconds
// overflow) that every instant within the window around recv is
// plausible.
const (
	usualFrom  = int64(MaxSpanAge/time.Second) + 2
	usualUntil = math.MaxInt64/int64(time.Second) - int64(Ahead/time.Second) - 2
)

// usual reports, in integer arithmetic, that start and end lie within
// [recv-MaxSpanAge, recv+Ahead], the end not before the start nor more
// than recorder.MaxSpan after it: Times's common case, which within and
// time.Time's comparisons decide at several times the cost. It is never
// true where they would say otherwise, and it is false (leaving the
// decision to them) for a recv near the ends of time. Seconds are
// compared first, so that no nanosecond count it computes overflows.
func usual(start, end, recv time.Time) bool {
	r := recv.Unix()
	if r < usualFrom || r > usualUntil {
		return false
	}
	lo, hi := r-int64(MaxSpanAge/time.Second)-1, r+int64(Ahead/time.Second)+1
	if s, e := start.Unix(), end.Unix(); s < lo || s > hi || e < lo || e > hi {
		return false
	}
	rn, sn, en := recv.UnixNano(), start.UnixNano(), end.UnixNano()
	return sn >= rn-int64(MaxSpanAge) && en <= rn+int64(Ahead) && en >= sn && en-sn <= int64(recorder.MaxSpan)
}
