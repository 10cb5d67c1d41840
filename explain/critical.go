package explain

import (
	"cmp"
	"slices"
	"time"
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

// CriticalPath returns the chain of records that bounded the session's
// duration, as Jaeger finds a trace's: from the session's end, the root
// that ended last; within it, the child that ended last before that
// point, then the child that ended before that one started, and so on;
// where no child is left, the record's own time back to its start counts,
// and the walk goes on in its parent from there. Overlapping children
// that did not end before the next one on the path started are off it:
// they ran beside the work that bounded the session.
//
// A record ends, for the walk, when the last record inside it ends: work
// left running after its parent ended (on another goroutine) is what the
// session waited for, so the path follows it. Time between roots on the
// path that no record covers (the session waiting on nothing recorded) is
// on no step.
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
	var sessionEnd time.Duration
	for i := int32(n - 1); i >= 0; i-- {
		if p := t.nodes.at(i).parent; p >= 0 {
			ends[p] = max(ends[p], ends[i])
		} else {
			sessionEnd = max(sessionEnd, ends[i])
		}
	}

	// Every array below is indexed by position + 1, so that 0 stands for
	// the session, whose children are the roots.
	parent := func(v int32) int32 { return t.nodes.at(v-1).parent + 1 }
	firstChild := func(v int32) int32 {
		if v == 0 {
			return t.first
		}
		return t.nodes.at(v - 1).first
	}

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
	cur, at := int32(0), sessionEnd
	for {
		if next[cur] < 0 {
			from[cur] = int32(len(kids))
			for j := firstChild(cur); j >= 0; j = t.nodes.at(j).next {
				kids = append(kids, j+1)
			}
			to[cur], next[cur] = int32(len(kids)), from[cur]
			// Latest end first; on a tie the longer first, since it was
			// running all the while the shorter one was.
			slices.SortFunc(kids[from[cur]:], func(a, b int32) int {
				if c := cmp.Compare(ends[b-1], ends[a-1]); c != 0 {
					return c
				}
				if c := cmp.Compare(t.nodes.at(a-1).Stamp.Offset, t.nodes.at(b-1).Stamp.Offset); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
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
			crit[cur] += at - ends[c-1]
			pathNext[c], pathFirst[cur] = pathFirst[cur], c
			cur, at = c, ends[c-1]
			continue
		}
		if cur == 0 {
			break
		}
		if start := t.nodes.at(cur - 1).Stamp.Offset; start < at {
			crit[cur] += at - start
			at = start
		}
		cur = parent(cur)
	}

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
