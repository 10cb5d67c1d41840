package exporter

import (
	"errors"
	"fmt"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// encoded is what encodeRecord tells of the record it encoded.
type encoded struct {
	kind    string
	effect  sessions.Effect
	problem error  // the span's control attributes were wrong (spanbridge.Mapped.Problem)
	cut     bool   // the SDK dropped some of the span's attributes
	err     error  // nothing was appended; wraps recorder.ErrTooLarge for a record no store holds
	name    string // the record's name, when it was too large: its report names it
}

// encodeRecord appends the value of the record of the ended span s,
// stamped st, to w's buffer, mapping it into w's record: the one place a
// span becomes the bytes that are stored, whether it ended in this
// process's SDK (OnEnd) or was imported (Importer). For the SpanProcessor
// it runs on the goroutine that ended the span, where it costs CPU and no
// disk, and in parallel across goroutines.
func encodeRecord(w *scratchSpace, s spanbridge.Source, level sessions.Level, inputs int, st sessions.Stamp) encoded {
	// Most spans are plain (appendPlain): encoded straight from the span.
	if buf, kind, effect, ok := appendPlain(w.buf[:0], s, inputs, st); ok {
		w.buf = buf
		return encoded{kind: kind, effect: effect}
	}
	return encodeMapped(w, s, level, inputs, st)
}

// encodeMapped is encodeRecord by way of the record: every span, plain
// or not, maps to its record (spanbridge.MapTo), whose encoding
// (recorder.AppendEncoded) checks every limit a store and a reader hold.
func encodeMapped(w *scratchSpace, s spanbridge.Source, level sessions.Level, inputs int, st sessions.Stamp) encoded {
	return encodeMappedWith(w, s, level, inputs, st, nil)
}

// encodeMappedWith is encodeMapped with a last change to the mapped
// record before it is encoded (extra, when not nil): the attributes an
// imported span's odd times add.
func encodeMappedWith(w *scratchSpace, s spanbridge.Source, level sessions.Level, inputs int, st sessions.Stamp, extra func(*spanbridge.Mapped)) encoded {
	spanbridge.MapTo(&w.m, s, level, inputs)
	m := &w.m
	keepOddStart(m, s.StartTime())
	if extra != nil {
		extra(m)
	}
	out := encoded{kind: m.Kind, effect: m.Effect, problem: m.Problem, cut: m.Record.DroppedAttributes > 0}
	w.buf, out.err = recorder.AppendEncoded(w.buf[:0], m.Kind, st, &m.Record)
	if errors.Is(out.err, recorder.ErrTooLarge) {
		out.name = m.Record.Name
	}
	return out
}

// A scratchSpace is what encoding a span uses and gives back: the buffer
// its record is encoded into before it is copied into the queue, outside
// its locks, and the mapped record, whose attribute and input slices are
// reused.
type scratchSpace struct {
	buf []byte
	m   spanbridge.Mapped
	// view is the Importer's view of the span it records (record), kept
	// here so that each imported span's view is not an allocation of its
	// own; it is emptied before the space goes back to the pool.
	view importedView
}

// scratch recycles scratch spaces, so that encoding a span allocates
// nothing of its own.
var scratch = sync.Pool{New: func() any { return &scratchSpace{buf: make([]byte, 0, 1024)} }}

// maxScratch is the largest buffer given back to scratch: a huge record's
// goes with it.
const maxScratch = 64 << 10

// enqueue encodes the record of the ended span s (when the marks policy
// records it) and queues it, with s itself when forwarding, in the place
// reserve took, saying whether s is a local root that ends its trace under
// KeepByTrace; false means nothing was queued. A panic in the mapping or
// the encoding (a hostile span, a bug) is recovered, counted and reported
// once, and the span dropped, rather than raised into the caller.
func (e *Exporter) enqueue(s sdktrace.ReadOnlySpan, k spanKey, o openSpan, record, forward, root bool) (queued bool) {
	defer func() {
		if p := recover(); p != nil {
			e.problems.Add(1)
			if _, seen := e.reported.Load("panic"); !seen {
				e.reportOnce("panic", fmt.Errorf("otelrecords: recording span %q failed: %v", s.Name(), p))
			}
			queued = false
		}
	}()
	q := queuedSpan{stamp: o.stamp, what: spanForward, root: root}
	var tr *trace.TraceID
	if e.byTrace {
		tr = &k.trace
	}
	var tl tooLarge
	var value []byte
	if record {
		w := scratch.Get().(*scratchSpace)
		defer func() {
			if cap(w.buf) <= maxScratch {
				scratch.Put(w)
			}
		}()
		enc := encodeRecord(w, s, max(e.rec.Level(), sessions.LevelBasic), o.inputs, o.stamp)
		switch {
		case !e.noted(enc):
			if !forward && !root {
				return false
			}
		case enc.err != nil:
			q.what, q.kind, q.effect, tl = spanTooLarge, enc.kind, enc.effect, tooLarge{enc.name, enc.err}
		default:
			q.what, q.kind, q.effect, value = spanRecord, enc.kind, enc.effect, w.buf
		}
	}
	e.queue.put(int(k.span[6])%queueShards, q, value, tl, s, forward, tr)
	return true
}

// noted counts and reports, once per class, what encoding found wrong with
// a span; it reports whether the span still makes a record (or a
// too-large one, which the loop counts).
func (e *Exporter) noted(enc encoded) bool {
	if enc.cut {
		e.cut.Add(1)
	}
	if enc.problem != nil {
		e.problems.Add(1)
		e.reportOnce(problemClass(enc.problem), enc.problem)
	}
	if enc.err != nil && !errors.Is(enc.err, recorder.ErrTooLarge) {
		e.problems.Add(1)
		e.reportOnce("record", fmt.Errorf("otelrecords: encode %s record: %w", enc.kind, enc.err))
		return false
	}
	return true
}
