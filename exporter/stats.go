package exporter

import "github.com/otelrecords/otelrecords/internal/write/recorder"

// Stats counts what the exporter did, so a user can tell when records are
// dropped and why: records written, held, evicted and spooled, traces
// seen, kept, dropped and evicted under KeepByTrace (after Shutdown,
// TracesKept + TracesDropped + TracesEvicted = TracesSeen), spans dropped
// from a full queue, problems, the store's opens, waits and size. Its fields
// are documented where they are declared, once (`go doc
// github.com/otelrecords/otelrecords/internal/write/recorder Stats`).
//
// It is the one counting type of the library's entry points, declared
// once: the SpanProcessor's counters are this type, an Importer's embed
// it, and Add sums it, so a counter added to it is counted everywhere.
type Stats = recorder.Stats

// Stats returns the exporter's counters.
func (e *Exporter) Stats() Stats {
	q := max(e.queue.n.Load(), 0)
	s := e.rec.Stats()
	s.Dropped, s.Problems, s.Queued, s.AttributesDropped = e.dropped.Load(), e.problems.Load(), q, e.cut.Load()
	return s
}
