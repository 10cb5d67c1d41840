package exporter

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
)

// KeepBy is what a change keeps: the whole session, or the one request
// (trace) that made it.
//
// Choose KeepBySession, the default, for a program that does one thing and
// ends — a build, a test run, a warm-up: when it changes something, every
// record of the run explains the change, the cache hits that led up to it
// included. Choose KeepByTrace for a server: its session never ends, and
// once one request changed something the session rule would write every
// later request, mostly cache hits, until the store's bound trims the
// misses that mattered. Under KeepByTrace only the requests that changed
// something are written, with every record of their trace.
type KeepBy = intake.KeepBy

// The retention units.
const (
	// KeepBySession keeps the session at its first changed record, with
	// what it held before (within the pending budget), and writes every
	// record after it.
	KeepBySession = intake.KeepBySession
	// KeepByTrace decides each trace on its own. Its records are held
	// until its local root span (a span with no parent, or a remote one:
	// a server's request span) ends, and for TraceGrace after, for
	// children that end after their root; the trace is kept at its first
	// changed record, with what it held, and dropped when the grace
	// passes with nothing changed. The session's row is written with its
	// first kept trace, and each later trace is still decided on its
	// own. Held traces share the pending budget (WithPendingBudget) with
	// what else is held: past it, whole traces go, those whose root has
	// ended first, then the oldest open ones (Stats.TracesEvicted). A
	// decision is remembered for a while (a minute, and at most 4,096 of
	// them), so that a span ending after its trace was decided follows
	// it: written if the trace was kept, let go if it was dropped — unless
	// it changed something itself, which keeps it and the rest of its
	// trace. A trace is held from the end of its first record to its
	// root's end: a record started after its root ended, on a goroutine
	// the request left running, with no record inside the root before,
	// has no end to wait for and is held until the budget evicts it
	// (unless it changed something, which keeps it at once). The marks
	// policy still says which spans of a kept trace are recorded. A
	// server that changes nothing still writes nothing and never opens
	// its store. Shutdown cuts the grace short: every trace still held
	// changed nothing, and is dropped. Stats counts TracesSeen,
	// TracesKept, TracesDropped and TracesEvicted; after Shutdown the last
	// three add up to the first.
	//
	// WithForward does not follow the trace's decision: it forwards every
	// span from the session's first kept trace on, as under KeepBySession.
	KeepByTrace = intake.KeepByTrace
)

// TraceGrace is how long, under KeepByTrace, a trace whose local root has
// ended is still held for children ending after it before it is dropped
// (see recorder.TraceGrace for why a second).
const TraceGrace = recorder.TraceGrace

// DefaultKeepBy is the retention unit when neither WithKeepBy nor
// OTELRECORDS_KEEP_BY sets one: the session, the seed's rule.
const DefaultKeepBy = intake.DefaultKeepBy

// ParseKeepBy parses a retention unit by name: session or trace, in any
// case.
func ParseKeepBy(s string) (KeepBy, error) { return intake.ParseKeepBy(s) }

// WithKeepBy sets what a change keeps: the session (KeepBySession, the
// default) or the trace that made it (KeepByTrace, for servers). See
// KeepBy.
func WithKeepBy(k KeepBy) Option { return func(c *config) { c.KeepBy = &k } }

// isLocalRoot reports whether s is the root of its trace in this process:
// no parent, or a parent in another process (a server's request span
// under a client's propagated context).
func isLocalRoot(s sdktrace.ReadOnlySpan) bool {
	p := s.Parent()
	return !p.IsValid() || p.IsRemote()
}
