package intake

import (
	"errors"
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Encoded is what EncodeRecord tells of the record it encoded.
type Encoded struct {
	Kind    string
	Effect  sessions.Effect
	Problem error  // the span's control attributes were wrong (spanbridge.Mapped.Problem)
	Cut     bool   // the SDK dropped some of the span's attributes
	Err     error  // nothing was appended; wraps recorder.ErrTooLarge for a record no store holds
	Name    string // the record's name, when it was too large: its report names it
	// Hint locates the fields a tally reads in the value, when the
	// encoder noted them (plain spans); handed with the value to the
	// Recorder, which counts a held record it lets go from it.
	Hint tally.Hint
}

// EncodeRecord appends the value of the record of the ended span s,
// stamped st, to w's buffer, mapping it into w's record: the one place a
// span becomes the bytes that are stored, whether it ended in this
// process's SDK (the SpanProcessor's OnEnd) or was imported (the
// Importer). For the SpanProcessor it runs on the goroutine that ended
// the span, where it costs CPU and no disk, and in parallel across
// goroutines.
func EncodeRecord(w *Scratch, s spanbridge.Source, level sessions.Level, inputs int, st sessions.Stamp) Encoded {
	// Most spans are plain (appendPlain): encoded straight from the span.
	if buf, enc, ok := appendPlain(w.Buf[:0], s, inputs, st); ok {
		w.Buf = buf
		return enc
	}
	return EncodeMapped(w, s, level, inputs, st)
}

// EncodeMapped is EncodeRecord by way of the record: every span, plain
// or not, maps to its record (spanbridge.MapTo), whose encoding
// (recorder.AppendEncoded) checks every limit a store and a reader hold.
func EncodeMapped(w *Scratch, s spanbridge.Source, level sessions.Level, inputs int, st sessions.Stamp) Encoded {
	return EncodeMappedWith(w, s, level, inputs, st, nil)
}

// EncodeMappedWith is EncodeMapped with a last change to the mapped
// record before it is encoded (extra, when not nil): the attributes an
// imported span's odd times add.
func EncodeMappedWith(w *Scratch, s spanbridge.Source, level sessions.Level, inputs int, st sessions.Stamp, extra func(*spanbridge.Mapped)) Encoded {
	spanbridge.MapTo(&w.M, s, level, inputs)
	m := &w.M
	keepOddStart(m, s.StartTime())
	if extra != nil {
		extra(m)
	}
	out := Encoded{Kind: m.Kind, Effect: m.Effect, Problem: m.Problem, Cut: m.Record.DroppedAttributes > 0}
	w.Buf, out.Err = recorder.AppendEncoded(w.Buf[:0], m.Kind, st, &m.Record)
	if errors.Is(out.Err, recorder.ErrTooLarge) {
		out.Name = m.Record.Name
	}
	return out
}

// A Scratch is what encoding a span uses and gives back: the buffer its
// record is encoded into before the entry point copies it on, and the
// mapped record, whose attribute and input slices are reused. Each entry
// point recycles them (MaxScratch).
type Scratch struct {
	Buf []byte
	M   spanbridge.Mapped
}

// NewScratch returns a Scratch with room for a usual record.
func NewScratch() *Scratch { return &Scratch{Buf: make([]byte, 0, 1024)} }

// Pool recycles scratch spaces, so that encoding a span allocates nothing
// of its own.
var Pool = sync.Pool{New: func() any { return NewScratch() }}

// MaxScratch is the largest buffer given back to a pool: a huge record's
// goes with it.
const MaxScratch = 64 << 10

// keepOddStart adds spanbridge.SpanStartKey to the mapped record of a
// span whose start the recorder replaced with the clock's reading
// (recorder.Sane).
func keepOddStart(m *spanbridge.Mapped, start time.Time) {
	if recorder.Sane(start) || start.IsZero() {
		return
	}
	m.Record.Attributes = append(m.Record.Attributes, sessions.Attr{Key: spanbridge.SpanStartKey, Value: sessions.StringValue(start.UTC().Format(time.RFC3339Nano))})
}

// ProblemClass is the class under which a span's problem is reported
// once: an invalid kind, attributes the SDK dropped, or an invalid effect.
func ProblemClass(err error) string {
	if errors.Is(err, sessions.ErrInvalidKind) {
		return "kind"
	}
	if errors.Is(err, spanbridge.ErrAttributesDropped) {
		return "dropped"
	}
	return "effect"
}
