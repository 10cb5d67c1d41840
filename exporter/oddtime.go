package exporter

import "github.com/otelrecords/otelrecords/spanbridge"

// SpanStartKey is the attribute a record carries when its span's start
// time was one a session cannot hold — before 1970 or from 2262 on, where
// nanoseconds since 1970 overflow (a zeroed clock, spans imported from a
// system with another epoch). Such a span is stamped at the process
// clock's reading, so its session's id and its offset stay sane and
// ordered, and its own start is kept here, as RFC 3339 text with
// nanoseconds (docs/FORMAT.md §3.5).
const SpanStartKey = spanbridge.SpanStartKey
