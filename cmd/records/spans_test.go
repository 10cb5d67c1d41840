package main

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// tspan is a span a test session records: its kind, name, start and wall
// on the session's clock, its ids (0 for none; trace 0 is trace 1), its
// attributes and its effect (the zero effect records it as Changed, so
// the session is kept from its first record).
type tspan struct {
	kind, name        string
	at, wall          time.Duration
	trace, id, parent uint64
	attrs             sessions.Attrs
	observed          bool
}

// writeSpans records one session of spans into the store in dir, through
// the Recorder as the exporter does: stamped in the order given (so seq i
// is spans[i]), each with its span ids.
func writeSpans(t *testing.T, dir string, start time.Time, label string, resource sessions.Attrs, spans []tspan) {
	t.Helper()
	record(t, dir, start, label, resource, func(rec *testsupport.Session) {
		stamps := make([]sessions.Stamp, len(spans))
		for i, s := range spans {
			stamps[i] = rec.Stamp(start.Add(s.at))
		}
		for i, s := range spans {
			trace := s.trace
			if trace == 0 {
				trace = 1
			}
			effect := sessions.Changed
			if s.observed {
				effect = sessions.Observed
			}
			rec.Put(s.kind, effect, stamps[i], sessions.Record{
				Name:         s.name,
				Wall:         s.wall,
				Attributes:   s.attrs,
				TraceID:      testTraceID(trace),
				SpanID:       testSpanID(s.id),
				ParentSpanID: testSpanID(s.parent),
			})
		}
	})
}

func testSpanID(n uint64) (id sessions.SpanID) {
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

func testTraceID(n uint64) (id sessions.TraceID) {
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}
