package explain

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// Step is a record on a session's critical path.
type Step struct {
	// Seq is the record's seq (SessionTree.BySeq finds its node).
	Seq uint64
	// Critical is how long the record itself bounded the session: the
	// time on the path that it, and none of the records on the path
	// inside it, covers. It may be zero: a record whose children on the
	// path cover it all.
	Critical time.Duration
}

// CriticalPath returns the chain of records that bounded one request of
// the session, as Jaeger finds a trace's critical path: from the request's
// end, the root that ended last; within it, the child that ended last
// before that point, then the child that ended before that one started,
// and so on; where no child is left, the record's own time back to its
// start counts, and the walk goes on in its parent from there. It follows
// parents and children, and siblings that ran one after the other;
// overlapping children that did not end before the next one on the path
// started are off it: they ran beside the work that bounded the request.
//
// A request is a root that a server or a consumer span opened (otelhttp's
// request spans, a queue consumer's), with the other roots of its trace:
// roots of different requests, concurrent requests to a server, are never
// chained, however they fall in time. Every other root (a program's
// phases, whatever traces they started) is part of the program, chained as
// siblings are, one request among the others. Of a session with many
// requests, the path is the longest request's: the one whose steps add up
// to the most time (of equals, the one that ended last), so its first
// step is the root it starts from.
//
// A record ends, for the walk, when the last record inside it ends: work
// left running after its parent ended (on another goroutine) is what the
// request waited for, so the path follows it. Time between roots on the
// path that no record covers (waiting on nothing recorded) is on no step.
//
// Steps come in pre-order: a record before the records on the path inside
// it, siblings in time order. It costs O(n log n) time at worst and O(n)
// memory for n records, without recursion.
func (t *SessionTree) CriticalPath() []Step {
	n := t.nodes.n
	if n == 0 {
		return nil
	}
	// Where each record ends for the walk: its own end, or the latest end
	// under it. A parent always comes before its children, so one pass
	// backwards carries every end up to the root.
	ends := make([]time.Duration, n)
	for i := range int32(n) {
		nd := t.nodes.at(i)
		ends[i] = endOf(nd.Stamp, nd.Record.Wall)
	}
	for i := int32(n - 1); i >= 0; i-- {
		if p := t.nodes.at(i).parent; p >= 0 {
			ends[p] = max(ends[p], ends[i])
		}
	}

	// Every array below is indexed by position + 1, so that 0 stands for
	// the session, whose children are the roots.
	parent := func(v int32) int32 { return t.nodes.at(v-1).parent + 1 }

	// The walk. at only moves back in time, so a child that ended after
	// at never qualifies later: a record's children are sorted once, when
	// the walk first enters it, into kids[from[v]:to[v]] (each record is
	// one record's child, so kids holds them all), and gone through once
	// from next[v].
	kids := make([]int32, 0, n)
	from, to, next := make([]int32, n+1), make([]int32, n+1), make([]int32, n+1)
	for v := range next {
		next[v] = -1 // not entered
	}
	crit := make([]time.Duration, n+1)
	// The records on the path, each under its parent, first in time
	// first: the walk finds them last first and pushes each in front.
	pathFirst, pathNext := make([]int32, n+1), make([]int32, n+1)
	for v := range pathFirst {
		pathFirst[v], pathNext[v] = -1, -1
	}
	// Latest end first; on a tie the longer first, since it was running
	// all the while the shorter one was.
	byEnd := func(a, b int32) int {
		if c := cmp.Compare(ends[b-1], ends[a-1]); c != 0 {
			return c
		}
		if c := cmp.Compare(t.nodes.at(a-1).Stamp.Offset, t.nodes.at(b-1).Stamp.Offset); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	// walk walks from the session, whose children are the roots in
	// kids[next[0]:to[0]] (one request's), back from at, and returns the
	// time its steps cover.
	walk := func(at time.Duration) (covered time.Duration) {
		cur := int32(0)
		for {
			if next[cur] < 0 {
				from[cur] = int32(len(kids))
				for j := t.nodes.at(cur - 1).first; j >= 0; j = t.nodes.at(j).next {
					kids = append(kids, j+1)
				}
				to[cur], next[cur] = int32(len(kids)), from[cur]
				slices.SortFunc(kids[from[cur]:], byEnd)
			}
			c := int32(-1)
			for next[cur] < to[cur] {
				k := kids[next[cur]]
				next[cur]++
				if ends[k-1] <= at {
					c = k
					break
				}
			}
			if c >= 0 {
				if cur > 0 { // time between roots is on no step
					crit[cur] += at - ends[c-1]
					covered += at - ends[c-1]
				}
				pathNext[c], pathFirst[cur] = pathFirst[cur], c
				cur, at = c, ends[c-1]
				continue
			}
			if cur == 0 {
				return covered
			}
			if start := t.nodes.at(cur - 1).Stamp.Offset; start < at {
				crit[cur] += at - start
				covered += at - start
				at = start
			}
			cur = parent(cur)
		}
	}

	// The roots, one request (one trace) at a time: sorted by trace, each
	// trace's in the order they were placed, and walked a run at a time.
	count := 0
	for j := t.first; j >= 0; j = t.nodes.at(j).next {
		count++
	}
	roots := make([]int32, 0, count)
	for j := t.first; j >= 0; j = t.nodes.at(j).next {
		roots = append(roots, j+1)
	}
	var program sessions.TraceID // the key of every root that is not a request
	traceOf := func(v int32) *sessions.TraceID {
		if r := &t.nodes.at(v - 1).Record; isRequest(r.SpanKind) {
			return &r.TraceID
		}
		return &program
	}
	byTrace := func(a, b int32) int { return bytes.Compare(traceOf(a)[:], traceOf(b)[:]) }
	if !slices.IsSortedFunc(roots, byTrace) { // as they are when one trace holds them all
		slices.SortStableFunc(roots, byTrace)
	}
	best, bestCovered, bestEnd := int32(-1), time.Duration(-1), time.Duration(0)
	for i := 0; i < len(roots); {
		j := i + 1
		for j < len(roots) && *traceOf(roots[j]) == *traceOf(roots[i]) {
			j++
		}
		var end time.Duration
		from[0] = int32(len(kids))
		for _, r := range roots[i:j] {
			kids = append(kids, r)
			end = max(end, ends[r-1])
		}
		to[0], next[0] = int32(len(kids)), from[0]
		slices.SortFunc(kids[from[0]:], byEnd)
		pathFirst[0] = -1
		if covered := walk(end); covered > bestCovered || covered == bestCovered && end > bestEnd {
			best, bestCovered, bestEnd = pathFirst[0], covered, end
		}
		i = j
	}
	pathFirst[0] = best

	// Pre-order, as Walk goes: down to the first record on the path
	// inside, else on to the next, else back up.
	var steps []Step
	for v := pathFirst[0]; v > 0; {
		steps = append(steps, Step{Seq: t.nodes.at(v - 1).Stamp.Seq, Critical: crit[v]})
		if pathFirst[v] > 0 {
			v = pathFirst[v]
			continue
		}
		for v > 0 && pathNext[v] < 0 {
			v = parent(v)
		}
		if v > 0 {
			v = pathNext[v]
		}
	}
	return steps
}

// isRequest reports whether a root of this span kind answers a request
// from outside the process, so that it is a request of its own: a server's
// (an HTTP or RPC handler) or a consumer's (a message taken from a queue).
// Builds' phases are internal spans, and chain as one program.
func isRequest(spanKind string) bool { return spanKind == "server" || spanKind == "consumer" }

// Requests returns how many requests the session's roots make, as
// CriticalPath counts them: one for each trace whose roots a server or a
// consumer span opened, and one for all the other roots (the program's
// own work), if there are any. A session of a build is one request; a
// server's, one per request it answered.
func (t *SessionTree) Requests() int {
	traces := map[sessions.TraceID]bool{}
	program := false
	for j := t.first; j >= 0; j = t.nodes.at(j).next {
		if r := &t.nodes.at(j).Record; isRequest(r.SpanKind) {
			traces[r.TraceID] = true
		} else {
			program = true
		}
	}
	if program {
		return len(traces) + 1
	}
	return len(traces)
}
