package importer

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer/internal/seen"
)

// spanRef identifies a span of a sender.
type spanRef = seen.Ref

// maxLookAhead is the most spans whose room lookAhead keeps for the next
// batch.
const maxLookAhead = 8192

// lookAhead is what take knows of a batch's spans before it takes them:
// the state of each valid span, and of its parent. Looked up in one loop
// of lookups that do not wait for each other, the table's cache misses
// (a span's slot is anywhere in tens of megabytes) overlap, where one
// lookup between each span's other work would wait for each in turn.
// Nothing take does before it places spans changes them.
type lookAhead struct {
	fps    []uint64     // each valid span's fingerprint, then its parent's (0: none)
	states []seen.State // their states
	at     int          // the next span's pair
	// take's traces settled and (in order) touched, emptied each batch.
	done    map[trace.TraceID]bool
	touched []trace.TraceID
}

// settled returns the set of traces settled, empty.
func (l *lookAhead) settled() map[trace.TraceID]bool {
	if cap(l.touched) > maxLookAhead {
		l.touched = nil // what a huge batch grew goes
	}
	if l.done == nil || len(l.done) > maxLookAhead/8 {
		l.done = make(map[trace.TraceID]bool)
	} else {
		clear(l.done)
	}
	return l.done
}

// lookUp looks up spans, salt's (the first one valid), in t.
func (l *lookAhead) lookUp(t *seen.Table, salt uint64, spans []Span) {
	if cap(l.fps) > 2*maxLookAhead {
		l.fps, l.states = nil, nil // what a huge batch grew goes
	}
	l.fps, l.at = l.fps[:0], 0
	for i := range spans {
		s := &spans[i]
		if !s.TraceID.IsValid() || !s.SpanID.IsValid() {
			continue
		}
		parent := uint64(0)
		if s.ParentSpanID.IsValid() {
			parent = t.Fingerprint(salt, spanRef{Trace: s.TraceID, Span: s.ParentSpanID})
		}
		l.fps = append(l.fps, t.Fingerprint(salt, spanRef{Trace: s.TraceID, Span: s.SpanID}), parent)
	}
	l.states = l.states[:0]
	for _, fp := range l.fps {
		st := seen.None
		if fp != 0 {
			st = t.State(fp)
		}
		l.states = append(l.states, st)
	}
}

// next returns the next valid span's fingerprint, its state and its
// parent's.
func (l *lookAhead) next() (fp uint64, span, parent seen.State) {
	if l.at+1 >= len(l.states) {
		return 0, seen.None, seen.None
	}
	fp, span, parent = l.fps[l.at], l.states[l.at], l.states[l.at+1]
	l.at += 2
	return fp, span, parent
}

// second is now as the seen table counts it: seconds from the Importer's
// epoch.
func (im *Importer) second(now time.Time) uint32 {
	return uint32(max(now.Sub(im.epoch), 0) / time.Second)
}

// fp returns the fingerprint of span ref of the sender salt.
func (im *Importer) fp(salt uint64, ref spanRef) uint64 { return im.seen.Fingerprint(salt, ref) }

// seenState returns what became of span ref of the session rs.
func (im *Importer) seenState(rs *remoteSession, ref spanRef) seen.State {
	return im.seen.State(im.fp(rs.salt, ref))
}

// remember sets the state of span ref of the session rs, and reports
// whether it was new.
func (im *Importer) remember(rs *remoteSession, ref spanRef, st seen.State, now time.Time) bool {
	return im.seen.Set(im.fp(rs.salt, ref), st, im.second(now))
}

// sweepEvery is how often the seen table is swept.
const sweepEvery = 10 * time.Second

// sweepSeen forgets spans placed more than the dedup window ago, every
// sweepEvery. im.mu is held.
func (im *Importer) sweepSeen(now time.Time) {
	if now.Sub(im.swept) < sweepEvery {
		return
	}
	im.swept = now
	sec, window := im.second(now), uint32(im.cfg.DedupWindow/time.Second)
	from := uint32(0)
	if sec > window {
		from = sec - window
	}
	im.seen.Sweep(from)
}
