package importer

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A span goes on as it came (Config.AsReceived) when nothing the mapping
// does to it shows in its record: a span the Importer did not change on
// its way in reads back, once it carries records.kind and records.seq
// (docs/MAPPING.md §8.3), as the record it became. Whatever the record
// holds that the span does not say so (times of another clock, the
// sender's times kept beside, attributes left out or cut, a kind or an
// effect given otherwise) makes it a span made again from the record.

// recordsPrefix starts every attribute key of the records contract.
const recordsPrefix = "records."

// asReceived reports whether the record of s, encoded as enc from its own
// times (odd false, its sender's clock without skew), is s as it came.
// Its kind is one of OTLP's six: an unspecified one is read back as the
// record's "unspecified" (a span made again from the record says it
// otherwise, internal with records.span_kind); a number of none is
// recorded as its Go name, which only records.span_kind carries.
// Whatever it has, its record holds.
func asReceived(s *Span, clock senderClock, odd bool, enc *intake.Encoded) bool {
	if odd || clock.Skew != 0 || enc.Err != nil || enc.Problem != nil || enc.Cut ||
		s.Kind < trace.SpanKindUnspecified || s.Kind > trace.SpanKindConsumer {
		return false
	}
	// records.kind and records.effect, once each, are read as the record's
	// kind and effect, and come back so; any other records.* attribute
	// (records.seq, records.full.*, records.span.start, ...) is read back
	// otherwise than it was recorded, or left out below level full.
	kinds, effects := 0, 0
	for i := range s.Attributes {
		switch k := s.Attributes[i].Key; {
		case !strings.HasPrefix(string(k), recordsPrefix):
		case k == spanbridge.KindKey:
			kinds++
		case k == spanbridge.EffectKey:
			effects++
		default:
			return false
		}
	}
	if kinds > 1 || effects > 1 {
		return false
	}
	// An event before its span's start is recorded at the start; control
	// and heavy keys of events and links are left out of them.
	for i := range s.Events {
		if s.Events[i].Time.Before(s.Start) || speaksRecords(s.Events[i].Attributes) {
			return false
		}
	}
	for i := range s.Links {
		if speaksRecords(s.Links[i].Attributes) {
			return false
		}
	}
	return true
}

// speaksRecords reports whether any of kvs has a key of the records
// contract.
func speaksRecords(kvs []attribute.KeyValue) bool {
	for i := range kvs {
		if strings.HasPrefix(string(kvs[i].Key), recordsPrefix) {
			return true
		}
	}
	return false
}
