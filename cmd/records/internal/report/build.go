package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

// Timeline drawing, in viewBox units.
const (
	tlWidth      = summary.DefaultWidth
	tlAxis       = 24.0 // the time axis, above the bars
	tlRow        = 24.0 // one row of bars
	tlBar        = 20.0 // a bar's height, leaving a gap below it
	tlCharWidth  = 7.2  // the width of a label's character, roughly
	tlMinLabelW  = 40.0 // the narrowest bar that gets a label
	tlMinBar     = summary.DefaultMinBar
	tlTickTarget = 8 // about how many ticks the axis has
	// tlGroupBarY is where a group's bars start below its row's top: the
	// row's name is written above them.
	tlGroupBarY = 12.0
)

// Options is the report's layout of a session (summary.NewReport) for
// this page: its limits, and its drawing's width and narrowest bar.
var Options = summary.ReportOptions{Width: tlWidth, MinBar: tlMinBar}

// Build makes the page of rep, a session laid out (summary.NewReport with
// Options), reading again from r the records the page shows: each kind's
// first rows, the slowest, and the drawn, with their attributes cut
// (cut.go). It reads the session once, in stamp order, and holds what the
// page shows; progress, when not nil, is told how many records it read.
func Build(r *sessions.Records, rep *summary.Report, progress func(read int64)) (*Page, error) {
	kinds, err := r.Kinds()
	if err != nil {
		return nil, err
	}
	s := rep.Session
	p := &Page{
		CSP:      csp,
		Style:    template.CSS(style),
		Script:   template.JS(script),
		Session:  newSession(s),
		Started:  render.Time(time.UnixMilli(s.StartedUnixMs)),
		Duration: dur(rep.Summary.End),
		Total:    rep.Total,
		Tallied:  rep.Tallied,
	}
	classes := map[string]string{} // by kind
	rowOf := map[uint64]*record{}  // the rows of the kinds' tables, by seq
	for i, k := range rep.Kinds {
		pk := &kind{Name: render.Clean(k.Kind), Class: "k" + strconv.Itoa(i%8), Count: k.Count, Wall: dur(k.Wall),
			Longest: dur(k.Longest), sum: k.Sum, did: k.Verdicts, Rows: make([]record, len(k.Rows)),
			Tallied: k.Tallied.Count, TalliedMedian: dur(k.Tallied.Quantile(0.5))}
		if k.Kind == sessions.MarksKind {
			pk.Class = "mark"
		}
		classes[k.Kind] = pk.Class
		for j, seq := range k.Rows {
			rowOf[seq] = &pk.Rows[j]
		}
		p.Kinds = append(p.Kinds, pk)
	}
	slowest := make(map[uint64]*record, len(rep.Slowest))
	p.Slowest = make([]record, len(rep.Slowest))
	for i, seq := range rep.Slowest {
		slowest[seq] = &p.Slowest[i]
	}
	p.Critical = newPath(rep)
	critical := make(map[uint64]bool, len(rep.Path))
	for _, st := range rep.Path {
		critical[st.Seq] = true
	}
	if rep.Grouping != nil {
		p.Groups = newGroups(rep, classes)
		p.Timeline.GroupedRoots = rep.GroupedRoots
		p.Timeline.Groups = render.Plural(len(rep.Grouping.Groups), "group")
		if len(rep.Grouping.Groups) > len(rep.Groups) {
			p.Timeline.Groups += fmt.Sprintf(", the %d with the most time", len(rep.Groups))
		}
	}
	tl := &p.Timeline
	tl.Omitted, tl.Shortest = rep.Omitted, dur(rep.Shortest)
	tl.Width = tlWidth
	tl.Height = tlAxis + float64(rep.RowCount)*tlRow
	tl.Ticks = ticks(rep.Summary.End)
	scale := tlWidth / float64(max(rep.Summary.End, 1))

	var read int64
	for kr, err := range r.InStampOrder(kinds, sessions.InSession(s.ID)) {
		if err != nil {
			return nil, err
		}
		if read++; progress != nil && read%4096 == 0 {
			progress(read)
		}
		seq := kr.Stamp.Seq
		did := verdict(rep, seq)
		if row := rowOf[seq]; row != nil {
			*row = newRecord(kr, did)
			row.attrs = cutAttrs(kr.Record.Attributes, &p.Cut)
		}
		if row := slowest[seq]; row != nil {
			*row = newRecord(kr, did)
		}
		y, ok := rep.Rows[seq]
		if !ok {
			continue // not drawn
		}
		b := newBar(kr, scale, tlAxis+float64(y)*tlRow)
		b.Class, b.Critical = classes[kr.Kind], critical[seq]
		b.Details = details(kr, did, &p.Cut)
		if b.Critical {
			tl.Critical++
		}
		tl.Bars = append(tl.Bars, b)
	}
	for _, k := range p.Kinds {
		k.fillCells()
	}
	if rep.Grouping != nil {
		drawGroups(p, rep, scale)
	}
	return p, nil
}

// verdict returns what the record at seq did, as the page shows it:
// "changed", "missed" (it changed nothing, but a record inside it did),
// "hit", or "" where the record does not say.
func verdict(rep *summary.Report, seq uint64) string {
	if n := rep.Tree.BySeq(seq); n != nil {
		return render.Verdict(n.Verdict())
	}
	return ""
}

// newRecord returns a record as a table row, without its attributes.
func newRecord(kr sessions.KindRecord, did string) record {
	return record{
		Kind:   render.Clean(kr.Kind),
		Seq:    kr.Stamp.Seq,
		Offset: dur(kr.Stamp.Offset),
		Wall:   dur(kr.Record.Wall),
		Name:   render.Clean(kr.Record.Name),
		Status: render.Clean(render.Status(kr.Record.Status)),
		Effect: did,
	}
}

// newBar returns a record's bar, at y, scale units a nanosecond.
func newBar(kr sessions.KindRecord, scale, y float64) bar {
	x := float64(kr.Stamp.Offset) * scale
	w := max(float64(max(kr.Record.Wall, 0))*scale, tlMinBar)
	b := bar{
		X:     svgNum(x),
		Y:     svgNum(y),
		W:     svgNum(w),
		H:     svgNum(tlBar),
		TextX: svgNum(x + 3),
		TextY: svgNum(y + tlBar/2 + 4), // the baseline of 12px text, centred
		Seq:   kr.Stamp.Seq,
	}
	if fit := int((w - 6) / tlCharWidth); w >= tlMinLabelW && fit > 0 {
		b.Label = truncate(kr.Record.Name, fit)
	}
	return b
}

// svgNum formats a coordinate compactly, to a hundredth of a unit.
func svgNum(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// ticks returns the time axis' marks for a session of duration d: about
// tlTickTarget of them, at a round step (1, 2 or 5 times a power of ten).
func ticks(d time.Duration) []tick {
	if d <= 0 {
		return []tick{{X: "0", Label: "0s"}}
	}
	raw := float64(d) / tlTickTarget
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step*m >= raw {
			step *= m
			break
		}
	}
	var out []tick
	for t := 0.0; t <= float64(d); t += step {
		out = append(out, tick{X: svgNum(t / float64(d) * tlWidth), Label: render.Duration(time.Duration(t))})
	}
	return out
}

// newPath is the critical path's table: the records of the path the
// report names (every one, or those that held the session up most).
func newPath(rep *summary.Report) path {
	p := path{Total: len(rep.Path), Hidden: len(rep.Path) - len(rep.Named), Steps: make([]step, len(rep.Named))}
	for i, st := range rep.Named {
		p.Steps[i] = step{
			Seq:      st.Seq,
			Kind:     render.Clean(st.Kind),
			Name:     render.Clean(st.Name),
			Indent:   strings.Repeat("\u00a0\u00a0", min(st.Depth, render.MaxIndent)),
			Offset:   dur(st.Offset),
			Wall:     dur(st.Wall),
			Critical: dur(st.Critical),
		}
	}
	return p
}

// newGroups is the table of the groups of roots the report draws.
func newGroups(rep *summary.Report, classes map[string]string) []group {
	var groups []group
	for _, g := range rep.Groups {
		groups = append(groups, group{
			Kind: render.Clean(g.Kind), Name: render.Clean(g.Name), Class: classes[g.Kind], Count: g.Count,
			Median: dur(g.Median), P90: dur(g.P90), Max: dur(g.Max), Slowest: g.Slowest,
		})
	}
	return groups
}

// drawGroups draws, below the rows the records take, a row per group of
// roots: a bar per stretch of its roots not drawn whole (summary.Group),
// and the group's name over the row.
func drawGroups(p *Page, rep *summary.Report, scale float64) {
	tl := &p.Timeline
	for i, g := range p.Groups {
		y := tlAxis + float64(rep.RowCount+i)*tlRow
		for _, s := range rep.Groups[i].Stretches {
			x, w := float64(s.Start)*scale, max(float64(s.End-s.Start)*scale, tlMinBar)
			tl.Bars = append(tl.Bars, bar{
				X: svgNum(x), Y: svgNum(y + tlGroupBarY), W: svgNum(w), H: svgNum(tlBar - tlGroupBarY),
				Class: g.Class + " group",
				Details: fmt.Sprintf("%s\n%s · %d roots grouped: median %s, p90 %s, max %s\nthis bar: %s from %s to %s",
					render.OrDash(g.Name), g.Kind, g.Count, g.Median, g.P90, g.Max,
					render.Plural(s.Roots, "root"), render.Duration(s.Start), render.Duration(s.End)),
				Seq: g.Slowest,
			})
		}
		tl.GroupLabels = append(tl.GroupLabels, groupLabel{
			X: "4", Y: svgNum(y + tlGroupBarY - 2), // above its bars
			Label: fmt.Sprintf("%s ×%d · median %s · p90 %s · max %s", truncate(g.Name, 60), g.Count, g.Median, g.P90, g.Max),
		})
	}
	tl.Height = tlAxis + float64(rep.RowCount+len(p.Groups))*tlRow
}

// fillCells sets the kind's table columns, the attribute keys its listed
// records have, and each row's cells (render.Value cleans them).
func (k *kind) fillCells() {
	column := map[string]int{}
	for _, row := range k.Rows {
		for _, kv := range row.attrs {
			column[kv.key] = 0
		}
	}
	k.Columns = slices.Sorted(func(yield func(string) bool) {
		for key := range column {
			if !yield(key) {
				return
			}
		}
	})
	for i, key := range k.Columns {
		column[key] = i
	}
	for i := range k.Rows {
		row := &k.Rows[i]
		row.Cells = make([]string, len(k.Columns))
		for _, kv := range row.attrs {
			row.Cells[column[kv.key]] = kv.value
		}
		row.attrs = nil
	}
}
