package exporter

import (
	"errors"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

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
			if !e.reported.Reported("panic") {
				e.reported.Once("panic", fmt.Errorf("otelrecords: recording span %q failed: %v", s.Name(), p))
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
		w := intake.Pool.Get().(*intake.Scratch)
		defer func() {
			if cap(w.Buf) <= intake.MaxScratch {
				intake.Pool.Put(w)
			}
		}()
		enc := intake.EncodeRecord(w, s, max(e.rec.Level(), sessions.LevelBasic), o.inputs, o.stamp)
		switch {
		case !e.noted(enc):
			if !forward && !root {
				return false
			}
		case enc.Err != nil:
			q.what, q.kind, q.effect, tl = spanTooLarge, enc.Kind, enc.Effect, tooLarge{enc.Name, enc.Err}
		default:
			q.what, q.kind, q.effect, q.hint, value = spanRecord, enc.Kind, enc.Effect, enc.Hint, w.Buf
		}
	}
	e.queue.put(int(k.span[6])%queueShards, q, value, tl, s, forward, tr)
	return true
}

// noted counts and reports, once per class, what encoding found wrong with
// a span; it reports whether the span still makes a record (or a
// too-large one, which the loop counts).
func (e *Exporter) noted(enc intake.Encoded) bool {
	if enc.Cut {
		e.cut.Add(1)
	}
	if enc.Problem != nil {
		e.problems.Add(1)
		e.reported.Once(intake.ProblemClass(enc.Problem), enc.Problem)
	}
	if enc.Err != nil && !errors.Is(enc.Err, recorder.ErrTooLarge) {
		e.problems.Add(1)
		e.reported.Once("record", fmt.Errorf("otelrecords: encode %s record: %w", enc.Kind, enc.Err))
		return false
	}
	return true
}
