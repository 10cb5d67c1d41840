// Package spanbridge is where OpenTelemetry meets records: the attribute
// contract a program types on its spans, and the mapping between spans and
// records in both directions, an ended span to the body of a record (Map)
// and a stored record back to a span (Span, under its session's Resource).
// The two directions share their keys and status codes here, so that what
// one writes the other reads.
//
// The contract is three attribute keys, usable without this package:
//
//   - records.kind (string) names the record's kind, the namespace
//     records/v1/<kind> it is stored under. A span without it is a mark: a
//     named stretch of the caller's work, stored as kind "marks".
//   - records.effect (string) is "changed" when the span accompanies a
//     change to the store's caches (a key tuned, an artifact compiled and
//     stored), "observed" otherwise (the default). The first changed record
//     keeps the session; it may be set at any time before the span ends.
//     Start the span with Record, which sets it to observed first: the SDK
//     drops new attribute keys once a span holds its limit (128 by
//     default) but still updates existing ones, so the change is then
//     never lost (see ErrAttributesDropped).
//   - records.full.<key> holds a heavy attribute (a kernel's source, say):
//     kept only at sessions.LevelFull, and stored as <key>, without the
//     prefix; dropped at LevelBasic.
//
// These control attributes are not repeated in the stored body. A span whose
// kind is invalid (empty, "sessions", holding 0x00, longer than 128 bytes,
// or not a string) is not lost: it is stored as a mark carrying the
// attribute records.invalid_kind with the kind it gave, and the exporter
// reports it once through otel.Handle. Its effect still counts: a change
// with a mistyped kind still keeps its session.
//
// The mapping reads everything a reader needs to explain the span: name,
// wall time, attributes (typed), status, events, trace, span and parent
// span ids, instrumentation scope, span kind, trace state, links and
// dropped counts; Span gives all of it back, to the nanosecond, so a store
// can be replayed to an OpenTelemetry backend (package replay) or exported
// as OTLP. The record also says what the span did: its effect, and which
// of its attributes it started with (its inputs, counted by InputCount
// when it starts) as opposed to those set while it ran (its outcome).
// This package imports no Badger: what a record looks like is decided here
// and in package sessions, how it is stored elsewhere.
package spanbridge
