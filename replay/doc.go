// Package replay turns the records of a store back into OpenTelemetry
// spans, so a store that outgrew one machine can be sent to the backends a
// fleet already runs (an OpenTelemetry Collector, Jaeger, ...) through any
// sdktrace.SpanExporter — in practice the official OTLP exporters, as the
// `records replay` command does.
//
// A record was a span once, and its body kept what a backend needs to show
// it again: its trace, span and parent ids, name, kind, attributes,
// status, events, links, trace state and dropped counts. Its start is not stored as a wall-clock instant but as an offset
// from its session's start, and the session's id is that start in Unix
// nanoseconds, so a replayed span starts at time.Unix(0, session id) +
// offset and ends wall later. Each session becomes one Resource: the
// Resource attributes its process had, plus the session's own fields
// (records.session.id, records.session.label, process.pid, ...).
//
// Replay is deterministic: the same store replays as the same spans, with
// the same ids and times, every time. Sending a session twice therefore
// sends duplicate spans, which a backend stores twice; whether it shows
// them twice is up to the backend (Jaeger's query service, for one, hides
// exact duplicates). Resume sends each record once instead: a Cursor file
// names, by session, the records the backend accepted (docs/FORMAT.md
// §10), and each run sends what it does not name. The mapping of a record to a span is package
// spanbridge's (spanbridge.Span and spanbridge.Resource), which maps spans
// to records too; docs/MAPPING.md, section 8, gives the whole of it.
//
// Records written without trace or span ids (by a sessions.Recorder driven
// directly, not by the OpenTelemetry exporter) get ids derived from their
// stamp, so they too replay the same way every time: the trace id is the
// session id's 8 bytes, big-endian, then 8 zero bytes; the span id is the
// record's seq + 1.
package replay
