// Package exporter is the OpenTelemetry span processor that turns a
// program's spans into the durable account of how its environment was
// built.
//
// Plug it into a TracerProvider beside any other processor (a
// BatchSpanProcessor to OTLP, say):
//
//	rec, err := exporter.New("", exporter.WithLabel("build"))
//	if err != nil { ... }
//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
//	defer tp.Shutdown(ctx)
//
// Where the level can be off, use Register instead: at level off the
// exporter is then not on the provider at all (the SDK copies every ended
// span for any processor it carries, which alone costs about a third more
// per span), and SetLevel takes it off and puts it back.
//
//	rec.Register(tp)
//	defer rec.Shutdown(ctx) // tp.Shutdown reaches rec only while it is on tp
//	defer tp.Shutdown(ctx)
//
// OnStart stamps each span (its session, its seq among all of the
// session's records, its offset from the session's start), so a span's seq
// is lower than that of every span started inside it. The session starts
// at its first span's start time, so offsets are exact and spans that
// followed each other never overlap in the record. OnEnd encodes the
// ended span's record, in parallel on the goroutines that end spans, and
// hands the bytes to a background goroutine: retention and every write
// happen there, never on the caller's span call.
//
// A span with records.kind is a record (records.kind=marks: an explicit
// mark, a phase the caller named); a span with neither records.kind nor
// records.effect is an implicit mark, recorded per the marks policy
// (WithMarks): by default only when a record starts inside it. WithKeepSessions bounds how many sessions a store
// keeps, WithMaxBytes how many bytes.
//
// The retention rules are those of package sessions: until the session's
// first changed record (a span with records.effect=changed) everything is
// held in memory within a byte budget, oldest dropped first; the first
// change keeps the session and writes what was held. The store is opened
// only then, so a warm run that finds everything cached opens nothing,
// creates no directory and writes no byte. A server keeps by request
// instead (WithKeepBy(KeepByTrace)): each trace is held until its local
// root span ends, kept if one of its records changed something and
// dropped otherwise, so a server that runs for days writes the requests
// that did the work and none of the cache hits.
//
// Only recording (sampled) spans reach a span processor. The provider
// carrying this processor should sample everything, as the SDK's default
// ParentBased(AlwaysSample) does; where an application samples its OTLP
// traces, give records a provider of its own.
//
// Errors go to the caller where there is one (ForceFlush, Shutdown) and to
// otel.Handle where there is none, once per cause rather than once per
// span. The exporter never panics into, prints in, or blocks the host
// program's span calls. Its counters (Stats) tell what was written, held,
// evicted and dropped.
//
// Spans that other programs sent (OTLP, through a Collector) are recorded
// by package importer, under the same rules.
//
// # Reading records back
//
// This package writes; package sessions reads. Open the store read-only
// (badgerstore.Open(dir, badgerstore.WithReadOnly()): it works while a
// writer is alive), wrap it in sessions.NewRecords, and ask it:
// Records.Newest for the session a program just ran, Records.Sessions for
// every one, Records.All or Records.InStampOrder for a session's records,
// sessions.Typed for records decoded into a struct of your own. Package
// explain answers the questions the records command asks (a session's
// tree, its summary and critical path, why a record was done, what was
// redone, a diff of two sessions), from a Go program.
package exporter
