package explain

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// RootGroup is the roots of a session that share a kind and a name: a
// server's requests to one route, say, which a reader takes in as one
// line (how many, how long typically, how long at worst) rather than one
// bar each.
type RootGroup struct {
	// Key is the group's kind and name as the tree tells them apart
	// (SessionTree.GroupKey).
	Key GroupKey
	// Kind and Name are the roots' kind and name. Name is "" when the
	// tree does not hold it (SessionTree.Name): the record of Slowest,
	// read again, has it.
	Kind, Name string
	// NameHeld says whether Name is the roots' name.
	NameHeld bool
	// Count is how many roots the group has.
	Count int
	// Median, P90 and Max are of their walls: the median (of an even
	// count, the mean of the middle two), the 90th percentile (nearest
	// rank: the wall that 90% of them took at most) and the longest.
	Median, P90, Max time.Duration
	// Total is the sum of their walls.
	Total time.Duration
	// Slowest is the seq of its root with the longest wall (of equals,
	// the first stamped).
	Slowest uint64
}

// GroupKey tells groups of roots apart: a kind and a name. It is
// comparable, a map key.
type GroupKey struct {
	kind, name int32
	hash       uint64 // of a name the tree does not hold
}

// GroupKey returns the key of the group a root falls in: its kind and
// name. n must be a node of t.
func (t *SessionTree) GroupKey(n *Node) GroupKey {
	k := GroupKey{kind: n.kind, name: n.name()}
	if k.name == noName {
		p := t.pos(n)
		i, found := sort.Find(len(t.unnamed), func(i int) int { return cmp.Compare(p, t.unnamed[i].index) })
		if found {
			k.hash = t.unnamed[i].hash
		}
	}
	return k
}

// RootGroups returns the session's roots (records that lie inside no
// other) grouped by kind and name, the group with the most total wall
// first (then by kind and name). It holds a wall per root.
func (t *SessionTree) RootGroups() []RootGroup {
	type group struct {
		RootGroup
		walls []time.Duration
	}
	byKey := map[GroupKey]*group{}
	var order []*group
	for n := range t.Roots() {
		key := t.GroupKey(n)
		g := byKey[key]
		wall := max(n.Wall, 0)
		if g == nil {
			name, held := t.Name(n)
			g = &group{RootGroup: RootGroup{Key: key, Kind: t.Kind(n), Name: name, NameHeld: held, Slowest: n.Seq, Max: wall}}
			byKey[key] = g
			order = append(order, g)
		}
		g.Count++
		g.Total = addSat(g.Total, wall)
		if wall > g.Max {
			g.Max, g.Slowest = wall, n.Seq
		}
		g.walls = append(g.walls, wall)
	}
	out := make([]RootGroup, len(order))
	for i, g := range order {
		g.Median = median(g.walls) // sorts them
		g.P90 = g.walls[(len(g.walls)*9+9)/10-1]
		out[i] = g.RootGroup
	}
	slices.SortFunc(out, func(a, b RootGroup) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Slowest, b.Slowest))
	})
	return out
}

// SlowestRoots returns the seqs of the session's n roots with the longest
// walls, the slowest first (of equals, the first stamped first): the
// requests worth expanding when there are too many to show.
func (t *SessionTree) SlowestRoots(n int) []uint64 {
	type root struct {
		seq  uint64
		wall time.Duration
	}
	var roots []root
	for r := range t.Roots() {
		roots = append(roots, root{r.Seq, r.Wall})
	}
	slices.SortFunc(roots, func(a, b root) int { return cmp.Or(cmp.Compare(b.wall, a.wall), cmp.Compare(a.seq, b.seq)) })
	out := make([]uint64, 0, min(n, len(roots)))
	for _, r := range roots[:min(n, len(roots))] {
		out = append(out, r.seq)
	}
	return out
}
