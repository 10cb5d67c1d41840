// Package asis tells whether an imported span is its record as it came
// (importer.Config.AsReceived): whether a span the Importer did not change
// on its way in reads back, once it carries records.kind and records.seq
// (docs/MAPPING.md §8.3), as the record it became. What the record holds
// that the span does not say so (times of another clock, the sender's
// times kept beside, attributes left out or cut, a kind or an effect
// given otherwise) makes it a span made again from the record.
package asis

import (
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The keys of the records contract that Check reads.
const (
	prefix    = "records."
	kindKey   = "records.kind"
	effectKey = "records.effect"
)

// Check reports whether a span recorded from its own times, on its
// sender's clock without skew, with nothing cut and no problem, is its
// record as it came: of one of OTLP's six kinds (an unspecified one reads
// back as the record's "unspecified"; a number of none is recorded as its
// Go name, which only records.span_kind carries); with no records.*
// attribute but records.kind and records.effect, once each, which are
// read as the record's kind and effect (any other — records.seq,
// records.full.*, records.span.start — is read back otherwise than it was
// recorded, or left out below level full); no event before its start
// (recorded at the start); and no key of the contract on an event or a
// link (left out of them).
func Check(kind trace.SpanKind, start time.Time, attrs []attribute.KeyValue, events []sdktrace.Event, links []sdktrace.Link) bool {
	if kind < trace.SpanKindUnspecified || kind > trace.SpanKindConsumer {
		return false
	}
	kinds, effects := 0, 0
	for i := range attrs {
		switch k := attrs[i].Key; {
		case !strings.HasPrefix(string(k), prefix):
		case k == kindKey:
			kinds++
		case k == effectKey:
			effects++
		default:
			return false
		}
	}
	if kinds > 1 || effects > 1 {
		return false
	}
	for i := range events {
		if events[i].Time.Before(start) || speaksRecords(events[i].Attributes) {
			return false
		}
	}
	for i := range links {
		if speaksRecords(links[i].Attributes) {
			return false
		}
	}
	return true
}

// speaksRecords reports whether any of kvs has a key of the records
// contract.
func speaksRecords(kvs []attribute.KeyValue) bool {
	for i := range kvs {
		if strings.HasPrefix(string(kvs[i].Key), prefix) {
			return true
		}
	}
	return false
}
