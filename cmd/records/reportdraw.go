package main

import (
	"cmp"
	_ "embed"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// Timeline drawing, in viewBox units.
const (
	tlWidth      = 1200.0
	tlAxis       = 24.0 // the time axis, above the bars
	tlRow        = 24.0 // one row of bars
	tlBar        = 20.0 // a bar's height, leaving a gap below it
	tlCharWidth  = 7.2  // the width of a label's character, roughly
	tlMinLabelW  = 40.0 // the narrowest bar that gets a label
	tlMinBar     = 1.5  // the narrowest bar: over a pixel on a page 1,200 pixels wide or more
	tlTickTarget = 8    // about how many ticks the axis has
)

// svgNum formats a coordinate compactly, to a hundredth of a unit.
func svgNum(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// ticks returns the time axis' marks for a session of duration d: about
// tlTickTarget of them, at a round step (1, 2 or 5 times a power of ten).
func ticks(d time.Duration) []reportTick {
	if d <= 0 {
		return []reportTick{{X: "0", Label: "0s"}}
	}
	raw := float64(d) / tlTickTarget
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step*m >= raw {
			step *= m
			break
		}
	}
	var out []reportTick
	for t := 0.0; t <= float64(d); t += step {
		out = append(out, reportTick{X: svgNum(t / float64(d) * tlWidth), Label: formatDuration(time.Duration(t))})
	}
	return out
}

// newReportPath is the critical path's table: every step when there are
// at most reportMaxRows, else those that held the session up most, in
// path order.
func newReportPath(r *sessions.Records, t *explain.SessionTree, path []explain.Step) (reportPath, error) {
	shown := path
	if len(path) > reportMaxRows {
		byCritical := slices.Clone(path)
		slices.SortStableFunc(byCritical, func(a, b explain.Step) int { return cmp.Compare(b.Critical, a.Critical) })
		keep := make(map[uint64]bool, reportMaxRows)
		for _, st := range byCritical[:reportMaxRows] {
			keep[st.Seq] = true
		}
		shown = slices.DeleteFunc(slices.Clone(path), func(st explain.Step) bool { return !keep[st.Seq] })
	}
	p := reportPath{Total: len(path), Hidden: len(path) - len(shown), Steps: make([]reportStep, len(shown))}
	for i, st := range shown {
		n := t.BySeq(st.Seq)
		name, err := nodeName(r, t, n)
		if err != nil {
			return p, err
		}
		p.Steps[i] = reportStep{
			Seq:      st.Seq,
			Kind:     clean(t.Kind(n)),
			Name:     clean(name),
			Indent:   strings.Repeat("\u00a0\u00a0", min(int(n.Depth), maxIndent)),
			Offset:   dur(n.Offset),
			Wall:     dur(n.Wall),
			Critical: dur(st.Critical),
		}
	}
	return p, nil
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
