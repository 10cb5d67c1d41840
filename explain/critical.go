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

	// byEnd returns the children of a record (the roots for -1), latest
	// end first; on a tie the longer first, since it was running all the
	// while the shorter one was.
	byEnd := func(i int32) []int32 {
		first := t.first
		if i >= 0 {
			first = t.nodes.at(i).first
		}
		var kids []int32
		for j := first; j >= 0; j = t.nodes.at(j).next {
			kids = append(kids, j)
		}
		slices.SortFunc(kids, func(a, b int32) int {
			if c := cmp.Compare(ends[b], ends[a]); c != 0 {
				return c
			}
			if c := cmp.Compare(t.nodes.at(a).Stamp.Offset, t.nodes.at(b).Stamp.Offset); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		return kids
	}

	// The walk. at only moves back in time, so a child that ended after
	// at never qualifies later: each record's children are sorted once
	// and gone through once.
	type visit struct {
		kids []int32
		next int
	}
	visits := map[int32]*visit{}
	crit := map[int32]time.Duration{}
	var order []int32 // the records on the path, as found
	cur, at := int32(-1), sessionEnd
	for {
		v := visits[cur]
		if v == nil {
			v = &visit{kids: byEnd(cur)}
			visits[cur] = v
		}
		next := int32(-1)
		for v.next < len(v.kids) {
			c := v.kids[v.next]
			v.next++
			if ends[c] <= at {
				next = c
				break
			}
		}
		if next >= 0 {
			if cur >= 0 {
				crit[cur] += at - ends[next]
			}
			cur, at = next, ends[next]
			order = append(order, cur)
			continue
		}
		if cur < 0 {
			break
		}
		if start := t.nodes.at(cur).Stamp.Offset; start < at {
			crit[cur] += at - start
			at = start
		}
		cur = t.nodes.at(cur).parent
	}

	// Pre-order: the records on the path under each one were found last
	// first, so each list is taken from its end.
	under := map[int32][]int32{}
	for _, i := range order {
		p := t.nodes.at(i).parent
		under[p] = append(under[p], i)
	}
	type frame struct {
		list []int32
		pos  int
	}
	steps := make([]Step, 0, len(order))
	stack := []frame{{under[-1], len(under[-1]) - 1}}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.pos < 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		i := f.list[f.pos]
		f.pos--
		steps = append(steps, Step{Seq: t.nodes.at(i).Stamp.Seq, Critical: crit[i]})
		if l := under[i]; len(l) > 0 {
			stack = append(stack, frame{l, len(l) - 1})
		}
	}
	return steps
}
