package seen

import "go.opentelemetry.io/otel/trace"

// MaxLookAhead is the most spans whose room a LookAhead keeps for the
// next batch.
const MaxLookAhead = 8192

// LookAhead is what an Importer's take knows of a batch's spans before
// it takes them: the state of each valid span, and of its parent. Looked
// up a few dozen at a time, their home buckets first read in a loop of
// reads that wait for nothing (Table.touch), the table's cache misses (a
// span's bucket is anywhere in tens of megabytes) overlap, where one
// lookup between each span's other work would wait for each in turn.
// The zero LookAhead is ready to use; it is not safe for concurrent use.
type LookAhead struct {
	fps    []uint64 // each valid span's fingerprint, then its parent's (0: none)
	states []State  // their states
	at     int      // the next span's pair
	// Touched are take's traces touched, in order, and done those it
	// settled (Settled): rooms kept from batch to batch.
	Touched []trace.TraceID
	done    map[trace.TraceID]bool
}

// Settled returns the set of traces settled, empty.
func (l *LookAhead) Settled() map[trace.TraceID]bool {
	if cap(l.Touched) > MaxLookAhead {
		l.Touched = nil // what a huge batch grew goes
	}
	if l.done == nil || len(l.done) > MaxLookAhead/8 {
		l.done = make(map[trace.TraceID]bool)
	} else {
		clear(l.done)
	}
	return l.done
}

// LookUp looks up in t the n spans ids gives (its trace, span and parent
// span ids), of the sender salt; spans without a valid trace and span id
// are left out, as take leaves them.
func (l *LookAhead) LookUp(t *Table, salt uint64, n int, ids func(i int) (trace.TraceID, trace.SpanID, trace.SpanID)) {
	if cap(l.fps) > 2*MaxLookAhead {
		l.fps, l.states = nil, nil // what a huge batch grew goes
	}
	l.fps, l.at = l.fps[:0], 0
	for i := range n {
		tid, sid, pid := ids(i)
		if !tid.IsValid() || !sid.IsValid() {
			continue
		}
		parent := uint64(0)
		if pid.IsValid() {
			parent = t.Fingerprint(salt, Ref{Trace: tid, Span: pid})
		}
		l.fps = append(l.fps, t.Fingerprint(salt, Ref{Trace: tid, Span: sid}), parent)
	}
	l.states = l.states[:0]
	if t.n == 0 {
		for range l.fps {
			l.states = append(l.states, None)
		}
		return
	}
	for c := 0; c < len(l.fps); c += touchAhead {
		part := l.fps[c:min(c+touchAhead, len(l.fps))]
		t.touch(part)
		for _, fp := range part {
			st := None
			if fp != 0 {
				st = t.State(fp)
			}
			l.states = append(l.states, st)
		}
	}
}

// touchAhead is how many fingerprints LookUp brings into the cache
// (Table.touch) before it looks them up: lines enough that their misses
// overlap, few enough to still be in the nearest cache when looked up.
const touchAhead = 32

// Next returns the next valid span's fingerprint, its state and its
// parent's.
func (l *LookAhead) Next() (fp uint64, span, parent State) {
	if l.at+1 >= len(l.states) {
		return 0, None, None
	}
	fp, span, parent = l.fps[l.at], l.states[l.at], l.states[l.at+1]
	l.at += 2
	return fp, span, parent
}
