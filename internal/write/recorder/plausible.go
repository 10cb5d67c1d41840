package recorder

import (
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// The rules by which what another process says of a span — its start and
// end, its session's id — is taken as it is, or not. Every path that takes
// spans from elsewhere applies them: the Importer (a Collector's senders,
// package exporter) and records pull (a backend's stored spans, package
// pull), so that a record is refused or corrected the same whichever way it
// came.

// MaxSpan is the longest a span may last before its times are taken as
// wrong: a span of a long build is hours long, not decades (a sender's
// clock stepped between start and end, an end of 500,000 hours).
const MaxSpan = 7 * 24 * time.Hour

// Plausible reports whether t can be a time a sender gives a span: an
// instant a session can hold (Sane) and past the first second of 1970,
// which a zeroed or unset clock gives.
func Plausible(t time.Time) bool { return Sane(t) && t.Unix() > 0 }

// SpanTimes returns the start and end a record takes of a span that says
// it ran from start to end, where ok reports whether an instant can be
// taken (Plausible, and whatever else the caller knows: when the span
// arrived). own is true when they are the span's own: both ok, the end not
// before the start nor more than MaxSpan after it. Otherwise the one of
// the two that is ok is taken for both (a record without a duration,
// the start when both are), and when neither is, found is false: the
// caller places the span where it knows (when it arrived, its session's
// start).
func SpanTimes(start, end time.Time, ok func(time.Time) bool) (s, e time.Time, own, found bool) {
	okStart, okEnd := ok(start), ok(end)
	switch {
	case okStart && okEnd && !end.Before(start) && end.Sub(start) <= MaxSpan:
		return start, end, true, true
	case okStart:
		return start, start, false, true
	case okEnd:
		return end, end, false, true
	}
	return time.Time{}, time.Time{}, false, false
}

// ValidID reports whether id can be a session's: one a Recorder gives,
// never 0 (IDs.claim) and an instant Sane holds (at most 2^63-1
// nanoseconds after 1970), so that its session sorts by start and
// Session.Started is its start.
func ValidID(id sessions.SessionID) bool {
	return id != 0 && Sane(time.Unix(0, int64(id)))
}
