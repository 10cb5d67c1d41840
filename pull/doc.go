// Package pull reads records back from a Jaeger query service into a
// store: the sessions `records replay` (or the records processor of a
// Collector) sent there come back as they were, so that every answer of
// the library and the records command runs on the fleet's records.
//
// Jaeger's api_v3 (its query service's HTTP port, 16686 by default)
// answers with OTLP. A span sent by replay carries what makes it a record
// again (docs/FORMAT.md §10): its Resource names its session and carries
// the session's row; the span its kind, seq, effect and inputs; its start
// less the session's start is its offset. spanbridge.FromResource and
// spanbridge.FromSpan, the inverses of the mapping replay sends with, read
// them back, and sessions.Records.Put writes them under the ids and seqs
// they had: a store replayed to Jaeger and pulled back reads the same,
// record for record.
//
// The query service is asked for traces by service and time window; its
// api_v3 has no pages, so a window whose answer holds as many traces as
// were asked for is asked for again in halves, until no answer is full.
// Answers are read a ResourceSpans at a time and written a batch at a
// time, so what a pull holds is bounded by one ResourceSpans, not by what
// it pulls. Pull writes only the records the store does not hold yet.
//
// Exact, here, depends on the backend keeping what it was sent. Jaeger's
// memory storage keeps OTLP as sent (checked by cmd/records' Jaeger
// tests). Storages that keep Jaeger's own span model keep times to the
// microsecond and may give arrays back as their JSON text.
package pull
