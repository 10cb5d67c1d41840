package exporter

import (
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A gateway receives spans from many machines, and their clocks disagree:
// one runs an hour ahead, one was never set (1970), one SDK sends 0 for a
// time it cannot hold (year 3000), one span ends before it starts. Trusted
// as they come, they date sessions in 1970, let `prune --keep` delete the
// sessions sent last, and give records negative or 56-year durations. So
// the Importer reads each sender's clock against its own, once per
// session, and places the session on the gateway's clock; within a
// session, times keep the sender's own spacing (offsets and durations are
// differences on one clock, which a skew does not change).

// The bounds within which a sender's clock is taken as it is.
const (
	// ClockAhead is how far past its arrival a span may end before its
	// sender's clock is taken to run ahead of the gateway's.
	ClockAhead = 5 * time.Second
	// ClockBehind is how long before its arrival a span may end before
	// its sender's clock is taken to run behind: a batch processor's
	// delay, a few retries. A sender whose spans arrive later than this
	// (an hour's outage replayed from a queue) is placed when it arrived.
	ClockBehind = 2 * time.Minute
	// MaxSpanAge is how long before its arrival a span may have started,
	// on the gateway's clock, before its start is taken as wrong (a
	// zeroed clock: 1970): a span of a long build is hours long, not
	// decades.
	MaxSpanAge = 7 * 24 * time.Hour
)

// SpanEndKey is the attribute a record carries, beside SpanStartKey, when
// its span's own end time could not be taken (zero, before its start, or
// far from when it arrived): the sender's end as it sent it, as RFC 3339
// text with nanoseconds (docs/FORMAT.md §3.5).
const SpanEndKey = spanbridge.SpanEndKey

// senderClock maps a sender's clock onto the gateway's: skew is added to
// every time the sender gives.
type senderClock struct {
	skew time.Duration
}

// measureClock reads a sender's clock from the first batch of its session,
// received at recv: if the latest end it gives lies within ClockBehind
// before recv and ClockAhead after it, the clock is taken as it is;
// otherwise the batch's latest end is taken as the moment it was sent.
// A sender that says it is a recorded session (records.session.id:
// `records replay` sending a stored session again) keeps its own times,
// which are the session's.
func measureClock(spans []ImportedSpan, recv time.Time, replayed bool) senderClock {
	if replayed {
		return senderClock{}
	}
	var latest time.Time
	for i := range spans {
		if e := spans[i].End; recorder.Plausible(e) && e.After(latest) {
			latest = e
		}
	}
	if latest.IsZero() {
		return senderClock{} // no time to read: each span is placed on its own (times)
	}
	if d := recv.Sub(latest); d <= ClockBehind && d >= -ClockAhead {
		return senderClock{}
	}
	return senderClock{skew: recv.Sub(latest)}
}

// times returns the start and end of s on the gateway's clock, and
// whether either was taken from elsewhere than the span itself: a time
// that is zero or not sane, an end before the start, a time ClockAhead
// past recv (the span's arrival) or a start MaxSpanAge before it (the
// rules of recorder.SpanTimes, within that window). An implausible start
// becomes the end (or the reverse), and a span with no plausible time at
// all is placed at recv with no duration: no record lasts 56 years or
// less than nothing.
func (c senderClock) times(s *ImportedSpan, recv time.Time) (start, end time.Time, odd bool) {
	// It runs for every span: the window is taken once, and a clock
	// without skew (most senders) adds nothing.
	latest, earliest := recv.Add(ClockAhead), recv.Add(-MaxSpanAge)
	plausible := func(t time.Time) bool {
		if !recorder.Plausible(t) {
			return false
		}
		g := c.on(t)
		return !g.After(latest) && !g.Before(earliest)
	}
	start, end, own, found := recorder.SpanTimes(s.Start, s.End, plausible)
	if !found {
		return recv, recv, true
	}
	return c.on(start), c.on(end), !own
}

// on returns t, a time on the sender's clock, on the gateway's.
func (c senderClock) on(t time.Time) time.Time {
	if c.skew == 0 {
		return t
	}
	return t.Add(c.skew)
}

// keepSenderTimes adds SpanStartKey and SpanEndKey to the record of a
// span whose times were taken from elsewhere (senderClock.times): what
// the sender said, so that nothing it sent is lost.
func keepSenderTimes(m *spanbridge.Mapped, s *ImportedSpan) {
	m.Record.Attributes = append(m.Record.Attributes, spanbridge.SenderTimes(s.Start, s.End)...)
}
