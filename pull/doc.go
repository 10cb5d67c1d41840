// Package pull reads records back from a Jaeger query service into a
// store: the sessions `records replay` (or the records processor of a
// Collector) sent there come back as they were, so that every answer of
// the library and the records command runs on the fleet's records.
//
// [NewJaeger] names a query service (its base URL, the HTTP client and
// headers to ask it with); [Pull] reads the sessions of some services and
// a time window from it into a store's [sessions.Records], and says what
// it did ([Progress]). `records pull` is a command over the two.
//
// Jaeger's api_v3 (its query service's HTTP port, 16686 by default)
// answers with OTLP. A span sent by replay carries what makes it a record
// again (docs/MAPPING.md §8): its Resource names its session and carries
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
//
// The query service is untrusted input, as a store is. Whatever it sends,
// a pull ends: each answer is read within a deadline, from the request to
// its last byte (Options.AnswerTimeout), and a size (MaxAnswerBytes), and
// a pull asks at most MaxQueries queries; a limit reached ends the pull
// with an error naming it (ErrAnswerTimeout, ErrAnswerTooLarge,
// ErrTooManyQueries). Whatever it sends, a pull holds a bounded amount of
// memory: an answer is read as a stream, a span at a time — a value it has
// no use for is skipped without being held, a span past MaxSpanBytes is
// stepped over and counted — and written a batch at a time; what a pull
// remembers of the sessions it reads is bounded caches, and what grows with
// the store it pulls into. What it reads is judged by the rules the
// Collector applies to its senders (recorder.SpanTimes, recorder.ValidID):
// spans of a session id no Recorder gives, or with a negative seq, are
// refused; implausible times are corrected; a session id the store holds
// with other content is a conflict, and the store keeps its own. Each is
// counted (Progress).
//
// A pull writes only the records the store does not hold yet, and only
// once it has read everything: until then they wait in a staging store
// (Options.Staging). A pull that fails, or is cut off by a limit, leaves
// the store as it was, so no session is left with part of what the
// backend holds of it.
//
// Exact, here, depends on the backend keeping what it was sent. Jaeger's
// memory storage keeps OTLP as sent (checked by cmd/records' Jaeger
// tests). Storages that keep Jaeger's own span model keep times to the
// microsecond and may give arrays back as their JSON text.
package pull
