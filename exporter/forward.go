package exporter

import (
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Forwarding: defaults, named so they are documented where declared.
const (
	// DefaultForwardBatch is how many spans one ExportSpans call of the
	// forward exporter gets at most: the BatchSpanProcessor's default.
	DefaultForwardBatch = 512
	// DefaultForwardTimeout bounds one ExportSpans call of the forward
	// exporter, and Shutdown's wait for it when Shutdown's context has no
	// deadline. The OTLP exporters bound their own calls (10 seconds by
	// default); this bound is for exporters that do not.
	DefaultForwardTimeout = 30 * time.Second
)

// WithForward sends the spans of kept sessions to exp as well — an
// OTLP exporter to a Collector or Jaeger, say — so that a central backend
// receives the traces of the runs that changed something, and nothing of
// the runs that found everything cached. It is a tail sampler at the level
// of the session, in the process:
//
//   - Until the session is kept (its first changed record), its ended spans
//     are held in memory, in order, within the same pending budget as the
//     records (WithPendingBudget; counted separately, as an estimate of
//     each span's memory: see ForwardStats.HeldBytes), the oldest dropped
//     first.
//   - When the session is kept, the held spans are sent first, in the order
//     they ended, then every later span as it ends.
//   - A session never kept sends nothing: Shutdown lets its held spans go.
//
// Spans are exported in batches of up to DefaultForwardBatch from a
// goroutine of the forwarder's own, never on the caller's span call, and
// never holding up the records: a slow or unreachable backend only fills
// the forward queue (bounded like the span queue, WithMaxQueueSize; past
// it spans are dropped and counted). ForceFlush returns once every span
// ended before it was exported (or failed), and Shutdown exports what is
// queued and shuts exp down. Export errors go to otel.Handle, once per
// failing streak, and to ForceFlush's caller.
//
// A span is forwarded as it ended, records.* attributes included, except
// that below LevelFull its heavy attributes (records.full.*) are left out,
// as they are from the records: the level says what leaves the process.
// Only spans this exporter stamps are forwarded: none at LevelOff.
func WithForward(exp sdktrace.SpanExporter) Option {
	return func(c *config) { c.forward = exp }
}

// ForwardStats counts what the forwarder did (see WithForward). All zero
// without WithForward.
type ForwardStats struct {
	// Sent is how many spans the forward exporter accepted.
	Sent int64
	// Failed is how many spans were in exports that returned an error.
	Failed int64
	// Held is how many spans are held now, waiting for the session to be
	// kept, and HeldBytes their estimated memory, counted against the
	// pending budget.
	Held, HeldBytes int64
	// Evicted is how many held spans the pending budget pushed out.
	Evicted int64
	// Queued is how many spans of the kept session wait to be exported.
	Queued int64
	// Dropped is how many spans of the kept session were not exported
	// because the forward queue was full, or Shutdown's context ended
	// first.
	Dropped int64
}

// ForwardStats returns the forwarder's counters.
func (e *Exporter) ForwardStats() ForwardStats {
	s := e.fwd.Stats()
	return ForwardStats{Sent: s.Sent, Failed: s.Failed, Held: s.Held, HeldBytes: s.HeldBytes,
		Evicted: s.Evicted, Queued: s.Queued, Dropped: s.Dropped}
}
