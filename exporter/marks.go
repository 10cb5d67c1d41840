package exporter

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/write/intake"
)

// Marks is the marks policy: which implicit marks become records. A span
// that speaks the records contract — it carries records.kind or
// records.effect — is always recorded: a record of its kind, or, with
// records.kind=marks (spanbridge.Mark) or no kind, a mark the caller asked
// for. (A span that says records.effect=changed changed the store's caches
// and keeps its session, whatever the policy.) A span that carries neither
// is an implicit mark: the spans of third-party instrumentation (otelhttp,
// a database driver) and of code that says nothing about records.
// Recording all of them would make a server that changed one thing write
// every request span for the rest of its life; recording none would lose
// the context a record ran in.
type Marks = intake.Marks

// The marks policies.
const (
	// MarksEnclosing records an implicit mark only when a record (a span
	// that speaks the contract, explicit marks included) starts inside it,
	// at any depth: as its child, its child's child, and so on by parent span id,
	// on any goroutine, whether the record ends before or after the mark.
	// So every record keeps the chain of spans it ran in, and a reader
	// nesting records by parent span id finds no hole between a record and
	// its root, while a request that only observed leaves nothing. An
	// implicit mark that encloses no record is let go when it ends: it is
	// never held, so it costs none of the pending budget.
	//
	// A span counts as a record for the spans around it when it says so
	// as it starts (spanbridge.Record and spanbridge.Mark do): one given
	// records.kind or records.effect later is still recorded, but does
	// not make the spans around it records. Enclosing marks are found
	// by walking up the open spans of this exporter, at most
	// intake.MaxEnclosingDepth of them.
	MarksEnclosing = intake.MarksEnclosing
	// MarksAll records every implicit mark.
	MarksAll = intake.MarksAll
	// MarksNone records no implicit mark.
	MarksNone = intake.MarksNone
)

// DefaultMarks is the marks policy when neither WithMarks nor
// OTELRECORDS_MARKS sets one.
const DefaultMarks = intake.DefaultMarks

// ParseMarks parses a marks policy by name: all, enclosing or none, in any
// case.
func ParseMarks(s string) (Marks, error) { return intake.ParseMarks(s) }

// WithMarks sets which spans that carry neither records.kind nor
// records.effect (implicit marks) become records; see Marks. Default DefaultMarks: only those that a record
// starts inside.
func WithMarks(m Marks) Option { return func(c *config) { c.Marks = &m } }

// enclose is OnStart's part of MarksEnclosing, for a span just stamped as
// o: it notes the span's parent in o, for walks from spans started inside
// it, and when the span is a record it marks its open ancestors as
// enclosing one. The cheap checks come first: a root span, or one whose
// parent is not open here or is marked already, costs no look at its
// attributes.
func (e *Exporter) enclose(s sdktrace.ReadWriteSpan, k spanKey, o *openSpan) {
	p := s.Parent()
	if !p.IsValid() || p.IsRemote() {
		return
	}
	o.parent = p.SpanID()
	up := spanKey{k.trace, o.parent}
	if e.stamps.unmarked(up) && intake.SpeaksRecords(s.Attributes()) {
		e.stamps.markEnclosing(up, intake.MaxEnclosingDepth)
	}
}

// recorded reports whether an ended span becomes a record under the marks
// policy; encloses says a record started inside it.
func (e *Exporter) recorded(s sdktrace.ReadOnlySpan, encloses bool) bool {
	return e.marks.Records(s.Attributes(), encloses)
}
