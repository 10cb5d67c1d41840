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
	n := t.nodes.Len()
	if n == 0 {
		return nil
	}
	// Where each record ends for the walk: its own end, or the latest end
	// under it. A parent always comes before its children, so one pass
	// backwards carries every end up to the root.
	ends := make([]time.Duration, n)
	for i := range int32(n) {
		nd := t.nodes.At(i)
		ends[i] = endOf(nd.Offset, nd.Wall)
	}
	for i := int32(n - 1); i >= 0; i-- {
		if p := t.nodes.At(i).parent; p >= 0 {
			ends[p] = max(ends[p], ends[i])
		}
	}

	// Records are numbered by position + 1 below, so that 0 stands for
	// the session, whose children are the roots.
	parent := func(v int32) int32 { return t.nodes.At(v-1).parent + 1 }

	// The walk keeps a state for each record it enters: the records on
	// the paths it follows, a few of a session's, so the others cost a
	// word each (entered).
	type state struct {
		// The record's children, sorted once when the walk first enters
		// it, are kids[from:to]; next is the first not tried yet. at only
		// moves back in time, so a child that ended after at never
		// qualifies later.
		from, to, next int32
		// first is the first of its children on the path, and sib its
		// own next sibling on it (record numbers, 0 for none): the walk
		// finds them last first and pushes each in front.
		first, sib int32
		crit       time.Duration
	}
	states := []state{{}}         // states[0] is the session's
	entered := make([]int32, n+1) // a record's state + 1; 0 for none
	entered[0] = 1
	var kids []int32
	stateOf := func(v int32) int32 {
		if entered[v] == 0 {
			states = append(states, state{from: -1})
			entered[v] = int32(len(states))
		}
		return entered[v] - 1
	}
	// Latest end first; on a tie the longer first, since it was running
	// all the while the shorter one was.
	byEnd := func(a, b int32) int {
		if c := cmp.Compare(ends[b-1], ends[a-1]); c != 0 {
			return c
		}
		if c := cmp.Compare(t.nodes.At(a-1).Offset, t.nodes.At(b-1).Offset); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	// walk walks from the session, whose children are the roots in
	// kids[states[0].next:states[0].to] (one request's), back from at,
	// and returns the time its steps cover.
	walk := func(at time.Duration) (covered time.Duration) {
		cur := int32(0)
		for {
			s := stateOf(cur)
			if states[s].from < 0 {
				from := int32(len(kids))
				for j := t.nodes.At(cur - 1).first; j >= 0; j = t.nodes.At(j).next {
					kids = append(kids, j+1)
				}
				slices.SortFunc(kids[from:], byEnd)
				states[s].from, states[s].to, states[s].next = from, int32(len(kids)), from
			}
			c := int32(-1)
			for states[s].next < states[s].to {
				k := kids[states[s].next]
				states[s].next++
				if ends[k-1] <= at {
					c = k
					break
				}
			}
			if c >= 0 {
				if cur > 0 { // time between roots is on no step
					states[s].crit += at - ends[c-1]
					covered += at - ends[c-1]
				}
				cs := stateOf(c)
				states[cs].sib, states[s].first = states[s].first, c
				cur, at = c, ends[c-1]
				continue
			}
			if cur == 0 {
				return covered
			}
			if start := t.nodes.At(cur - 1).Offset; start < at {
				states[s].crit += at - start
				covered += at - start
				at = start
			}
			cur = parent(cur)
		}
	}

	// The roots, one request (one trace) at a time: sorted by trace, each
	// trace's in the order they were placed, and walked a run at a time.
	type root struct {
		v     int32
		trace sessions.TraceID // zero for every root that is not a request
	}
	var roots []root
	req := t.requests
	for j := t.first; j >= 0; j = t.nodes.At(j).next {
		r := root{v: j + 1}
		for len(req) > 0 && req[0].index < j {
			req = req[1:]
		}
		if len(req) > 0 && req[0].index == j {
			r.trace = req[0].trace
		}
		roots = append(roots, r)
	}
	byTrace := func(a, b root) int { return bytes.Compare(a.trace[:], b.trace[:]) }
	if !slices.IsSortedFunc(roots, byTrace) { // as they are when one trace holds them all
		slices.SortStableFunc(roots, byTrace)
	}
	best, bestCovered, bestEnd := int32(0), time.Duration(-1), time.Duration(0)
	for i := 0; i < len(roots); {
		j := i + 1
		for j < len(roots) && roots[j].trace == roots[i].trace {
			j++
		}
		// A request's walk enters only its own records: the states of
		// one that is not the longest so far are let go.
		base := len(states)
		kids = kids[:0]
		var end time.Duration
		for _, r := range roots[i:j] {
			kids = append(kids, r.v)
			end = max(end, ends[r.v-1])
		}
		slices.SortFunc(kids, byEnd)
		states[0] = state{from: 0, to: int32(len(kids))}
		if covered := walk(end); covered > bestCovered || covered == bestCovered && end > bestEnd {
			best, bestCovered, bestEnd = states[0].first, covered, end
		} else {
			states = states[:base]
		}
		i = j
	}

	// Pre-order, as Walk goes: down to the first record on the path
	// inside, else on to the next, else back up.
	var steps []Step
	at := func(v int32) *state { return &states[entered[v]-1] }
	for v := best; v > 0; {
		steps = append(steps, Step{Seq: t.nodes.At(v - 1).Seq, Critical: at(v).crit})
		if at(v).first > 0 {
			v = at(v).first
			continue
		}
		for v > 0 && at(v).sib == 0 {
			v = parent(v)
		}
		if v > 0 {
			v = at(v).sib
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
	for _, r := range t.requests {
		traces[r.trace] = true
	}
	program := false
	for n := range t.Roots() {
		if !n.has(flagRequest) {
			program = true
			break
		}
	}
	if program {
		return len(traces) + 1
	}
	return len(traces)
}
