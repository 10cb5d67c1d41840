package importer

import (
	"time"

	"github.com/otelrecords/otelrecords/importer/internal/skew"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The bounds within which a sender's clock is taken as it is.
const (
	// ClockAhead is how far past its arrival a span may end before its
	// sender's clock is taken to run ahead of the gateway's.
	ClockAhead = skew.Ahead
	// ClockBehind is how long before its arrival a span may end before
	// its sender's clock is taken to run behind: a batch processor's
	// delay, a few retries. A sender whose spans arrive later than this
	// (an hour's outage replayed from a queue) is placed when it arrived.
	ClockBehind = skew.Behind
	// MaxSpanAge is how long before its arrival a span may have started,
	// on the gateway's clock, before its start is taken as wrong (a
	// zeroed clock: 1970): a span of a long build is hours long, not
	// decades.
	MaxSpanAge = skew.MaxSpanAge
)

// SpanEndKey is the attribute a record carries, beside SpanStartKey, when
// its span's own end time could not be taken (zero, before its start, or
// far from when it arrived): the sender's end as it sent it, as RFC 3339
// text with nanoseconds (docs/FORMAT.md §3.5).
const SpanEndKey = spanbridge.SpanEndKey

// senderClock maps a sender's clock onto the gateway's (package skew).
type senderClock = skew.Clock

// measureClock reads a sender's clock from the first batch of its session,
// received at recv (skew.Measure).
func measureClock(spans []Span, recv time.Time, replayed bool) senderClock {
	return skew.Measure(len(spans), func(i int) time.Time { return spans[i].End }, recv, replayed)
}

// keepSenderTimes adds SpanStartKey and SpanEndKey to the record of a
// span whose times were taken from elsewhere (skew.Clock.Times): what
// the sender said, so that nothing it sent is lost.
func keepSenderTimes(m *spanbridge.Mapped, s *Span) {
	m.Record.Attributes = append(m.Record.Attributes, spanbridge.SenderTimes(s.Start, s.End)...)
}
