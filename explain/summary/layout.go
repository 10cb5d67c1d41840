package summary

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// Group is a group of roots of a report's session: its roots that share a
// kind and a name, named, and those not drawn whole merged into the
// stretches of time they cover.
type Group struct {
	explain.RootGroup
	// Name is the roots' name (GroupName).
	Name string
	// Stretches are the group's roots not drawn whole, each at least the
	// report's MinLength long, merged where they overlap or lie closer
	// than MinLength apart (a gap no one could see, which would only split
	// the row by chance of timing), in time order.
	Stretches []Stretch
}

// Stretch is a stretch of time the roots of a group cover.
type Stretch struct {
	Start, End time.Duration
	// Roots is how many roots it merges.
	Roots int
}

// group groups the session's roots by kind and name when there are more
// than ScreenRoots whose names repeat (GroupRoots): the slowest ExpandRoots
// roots (and the root the critical path starts from) are drawn whole, and
// the other roots of the most groups, at most most, as stretches. It
// narrows drawn to the records inside the roots drawn whole.
func (rep *Report) group(r *sessions.Records, drawn map[uint64]bool, most int) error {
	t := rep.Tree
	g := GroupRoots(t)
	if g == nil {
		return nil
	}
	rep.Grouping = g
	expanded := map[uint64]bool{}
	for _, seq := range g.Slowest {
		expanded[seq] = true
	}
	if len(rep.Path) > 0 {
		expanded[rep.Path[0].Seq] = true // pre-order: the path's root
	}
	var root uint64
	for n := range t.Walk() {
		if n.Depth == 0 {
			root = n.Seq
		}
		if !expanded[root] {
			delete(drawn, n.Seq)
		}
	}
	rep.GroupedRoots = g.Roots - len(expanded)
	for _, rg := range g.Groups[:min(len(g.Groups), most)] {
		name, err := GroupName(r, t, rg)
		if err != nil {
			return err
		}
		rep.Groups = append(rep.Groups, Group{RootGroup: rg, Name: name})
	}
	rep.expanded = expanded
	return nil
}

// stretch merges each group's roots not drawn whole into stretches.
func (rep *Report) stretch() {
	t := rep.Tree
	row := map[explain.GroupKey]int{}
	for i, g := range rep.Groups {
		row[g.Key] = i
	}
	for n := range t.Roots() {
		i, ok := row[t.GroupKey(n)]
		if !ok || rep.expanded[n.Seq] {
			continue
		}
		g := &rep.Groups[i]
		g.Stretches = append(g.Stretches, Stretch{n.Offset, n.Offset + max(n.Wall, rep.MinLength), 1})
	}
	for i := range rep.Groups {
		ss := rep.Groups[i].Stretches
		slices.SortFunc(ss, func(a, b Stretch) int { return cmp.Compare(a.Start, b.Start) })
		merged := ss[:0]
		for _, s := range ss {
			if k := len(merged) - 1; k >= 0 && s.Start <= merged[k].End+rep.MinLength {
				merged[k].End = max(merged[k].End, s.End)
				merged[k].Roots++
				continue
			}
			merged = append(merged, s)
		}
		rep.Groups[i].Stretches = merged
	}
}

// layOutTree gives every drawn record of the session a row of the
// timeline, so that a record is drawn below the drawn record it lies
// inside (by parent span, as the tree nests them), and no two bars of a
// row overlap. Each root and the records inside it form a block: rows of
// their own, each record under its parent, one that would overlap a
// record already placed going a row further down. Blocks then share a
// band of rows when they follow one another in time, and get a band of
// their own when they overlap: four clients served at once make four
// bands, however many requests each sent. A record not drawn passes its
// place on to the records inside it.
//
// Bars are at least minWidth long, as drawn, so that hairlines do not
// cover one another. It returns each drawn record's row, by seq, and how
// many rows there are. It walks the tree once, without recursion, and
// holds a few words per drawn record and per level of depth.
func layOutTree(t *explain.SessionTree, drawn map[uint64]bool, minWidth time.Duration) (map[uint64]int, int) {
	type place struct {
		seq uint64
		row int // within its block
	}
	type block struct {
		start, end time.Duration
		rows       int
		places     []place
	}
	var (
		blocks []*block
		cur    *block       // the current root's, once a record of it is drawn
		occ    [][]interval // the current block's rows, each sorted by start
		// below[d] is the row the children of the record at depth d on
		// the way down start from: the one below the record, or below
		// its nearest drawn ancestor when not drawn. The walk is in
		// pre-order, so a record's parent is the last record it passed
		// one level up.
		below []int
	)
	for n := range t.Walk() {
		depth := int(n.Depth)
		if depth == 0 {
			cur = nil
			occ = occ[:0]
		}
		from := 0
		if depth > 0 {
			from = below[depth-1]
		}
		next := from
		if drawn[n.Seq] {
			if cur == nil {
				cur = &block{start: math.MaxInt64, end: math.MinInt64}
				blocks = append(blocks, cur)
			}
			iv := interval{n.Offset, n.Offset + max(n.Wall, minWidth)}
			row := from
			for ; row < len(occ); row++ {
				if at, ok := fits(occ[row], iv); ok {
					occ[row] = slices.Insert(occ[row], at, iv)
					break
				}
			}
			if row == len(occ) {
				occ = append(occ, []interval{iv})
			}
			cur.places = append(cur.places, place{n.Seq, row})
			cur.rows = max(cur.rows, row+1)
			cur.start, cur.end = min(cur.start, iv.start), max(cur.end, iv.end)
			next = row + 1
		}
		below = append(below[:depth], next)
	}

	// Bands, first fit: a block goes into the first band whose blocks all
	// ended by the time it starts.
	type band struct {
		end        time.Duration
		rows, base int
	}
	var bands []*band
	in := make([]*band, len(blocks))
	for i, b := range blocks {
		if b.rows == 0 {
			continue // nothing of it drawn
		}
		for _, bd := range bands {
			if bd.end <= b.start {
				in[i] = bd
				break
			}
		}
		if in[i] == nil {
			in[i] = &band{}
			bands = append(bands, in[i])
		}
		in[i].end = b.end
		in[i].rows = max(in[i].rows, b.rows)
	}
	rows := 0
	for _, bd := range bands {
		bd.base = rows
		rows += bd.rows
	}
	places := make(map[uint64]int, len(drawn))
	for i, b := range blocks {
		for _, p := range b.places {
			places[p.seq] = in[i].base + p.row
		}
	}
	return places, rows
}

// interval is a bar's stretch of the time axis, [start, end).
type interval struct{ start, end time.Duration }

// fits reports whether iv overlaps none of a row's intervals (sorted by
// start, and apart), and where it goes among them.
func fits(row []interval, iv interval) (int, bool) {
	i, _ := slices.BinarySearchFunc(row, iv.start, func(x interval, start time.Duration) int { return cmp.Compare(x.start, start) })
	if i > 0 && row[i-1].end > iv.start {
		return i, false // the one before has not ended when iv starts
	}
	if i < len(row) && row[i].start < iv.end {
		return i, false // the one after starts before iv ends
	}
	return i, true
}
