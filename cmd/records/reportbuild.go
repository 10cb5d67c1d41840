package main

import (
	"cmp"
	"container/heap"
	_ "embed"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// buildReport reads the session's records twice: first to count, sum,
// build the session's tree and find its critical path (the tree holds a
// few words a record: its seq, times, kind and effect, and where it hangs;
// and the first rows of each table), then to fetch the details of the
// records drawn. It holds at most reportMaxBars records' details,
// whatever the session's size.
func buildReport(r *sessions.Records, s sessions.Session, prog *progress) (*reportPage, error) {
	kinds, err := r.Kinds()
	if err != nil {
		return nil, err
	}
	page := &reportPage{
		CSP:     reportCSP,
		Style:   template.CSS(reportCSS),
		Script:  template.JS(reportJS),
		Session: newReportSession(s),
		Started: formatTime(time.UnixMilli(s.StartedUnixMs)),
	}
	byKind := map[string]*reportKind{}
	var b explain.TreeBuilder
	for kr, err := range r.InStampOrder(kinds, sessions.InSession(s.ID)) {
		if err != nil {
			return nil, err
		}
		prog.add()
		rec := kr.Record
		page.Total++
		k := byKind[kr.Kind]
		if k == nil {
			k = &reportKind{Name: clean(kr.Kind)}
			byKind[kr.Kind] = k
		}
		k.Count++
		k.sum += max(rec.Wall, 0)
		k.Longest = max(k.Longest, dur(rec.Wall))
		row := reportRecord{
			Kind:   k.Name,
			Seq:    kr.Stamp.Seq,
			Offset: dur(kr.Stamp.Offset),
			Wall:   dur(rec.Wall),
			Name:   clean(rec.Name),
			Status: clean(formatStatus(rec.Status)),
		}
		if len(k.Rows) < reportMaxRows {
			row.attrs = cutAttrs(rec.Attributes, &page.Cut)
			k.Rows = append(k.Rows, row)
		}
		page.Slowest = keepSlowestRows(page.Slowest, row)
		if err := b.Add(kr); err != nil {
			return nil, err
		}
	}
	tree := b.Tree()
	sum := tree.Summary()
	page.Duration = dur(sum.End)
	for _, ks := range sum.Kinds {
		byKind[ks.Kind].Wall = dur(ks.Wall)
	}
	// What each record did, which its tree tells: a lookup inside which
	// a compile changed something missed, though it changed nothing.
	for n := range tree.Nodes() {
		byKind[tree.Kind(n)].did[n.Verdict()]++
	}
	for _, k := range byKind {
		for i := range k.Rows {
			k.Rows[i].Effect = verdictCell(tree, k.Rows[i].Seq)
		}
	}
	for i := range page.Slowest {
		page.Slowest[i].Effect = verdictCell(tree, page.Slowest[i].Seq)
	}

	classes := map[string]string{} // by kind
	for i, name := range slices.Sorted(maps.Keys(byKind)) {
		k := byKind[name]
		k.Class = "k" + strconv.Itoa(i%8)
		if name == sessions.MarksKind {
			k.Class = "mark"
		}
		classes[name] = k.Class
		k.fillCells()
		page.Kinds = append(page.Kinds, k)
	}

	path := tree.CriticalPath()
	critical := make(map[uint64]bool, len(path))
	for _, st := range path {
		critical[st.Seq] = true
	}
	if page.Critical, err = newReportPath(r, tree, path); err != nil {
		return nil, err
	}

	// Draw the longest records when there are too many to draw.
	drawn := make(map[uint64]bool, min(tree.Len(), reportMaxBars))
	if tree.Len() > reportMaxBars {
		shortest := longestWalls(tree, reportMaxBars)
		// Of the records as short as the shortest drawn, the first ones
		// fill what is left.
		ties := reportMaxBars
		for n := range tree.Nodes() {
			if n.Wall > shortest {
				ties--
			}
		}
		for n := range tree.Nodes() {
			switch {
			case n.Wall > shortest:
				drawn[n.Seq] = true
			case n.Wall == shortest && ties > 0:
				drawn[n.Seq] = true
				ties--
			}
		}
		page.Timeline.Omitted = tree.Len() - len(drawn)
		page.Timeline.Shortest = dur(shortest)
	} else {
		for n := range tree.Nodes() {
			drawn[n.Seq] = true
		}
	}
	// A session with too many roots to draw each draws the slowest whole,
	// and the others grouped.
	expanded, err := groupRoots(page, r, tree, path, classes, drawn)
	if err != nil {
		return nil, err
	}
	// A bar is drawn tlMinBar units wide at least, never a sliver under a
	// pixel: as long, for the layout.
	minWidth := max(time.Duration(float64(sum.End)*tlMinBar/tlWidth), 1)
	places, rows := layOutTree(tree, drawn, minWidth)
	tl := &page.Timeline
	tl.Width = tlWidth
	tl.Height = tlAxis + float64(rows)*tlRow
	tl.Ticks = ticks(sum.End)
	scale := tlWidth / float64(max(sum.End, 1))

	// Second pass: the drawn records' details.
	prog.setTotal(int64(page.Total))
	for kr, err := range r.InStampOrder(kinds, sessions.InSession(s.ID)) {
		if err != nil {
			return nil, err
		}
		prog.add()
		row, ok := places[kr.Stamp.Seq]
		if !ok {
			continue // not drawn
		}
		start := kr.Stamp.Offset
		x := float64(start) * scale
		w := max(float64(max(kr.Record.Wall, 0))*scale, tlMinBar)
		y := tlAxis + float64(row)*tlRow
		bar := reportBar{
			X:        svgNum(x),
			Y:        svgNum(y),
			W:        svgNum(w),
			H:        svgNum(tlBar),
			TextX:    svgNum(x + 3),
			TextY:    svgNum(y + tlBar/2 + 4), // the baseline of 12px text, centred
			Class:    classes[kr.Kind],
			Details:  details(kr, verdictCell(tree, kr.Stamp.Seq), &page.Cut),
			Seq:      kr.Stamp.Seq,
			Critical: critical[kr.Stamp.Seq],
		}
		if bar.Critical {
			tl.Critical++
		}
		if fit := int((w - 6) / tlCharWidth); w >= tlMinLabelW && fit > 0 {
			bar.Label = truncate(kr.Record.Name, fit)
		}
		tl.Bars = append(tl.Bars, bar)
	}
	if expanded != nil {
		drawGroups(page, tree, expanded, rows, minWidth, scale)
	}
	return page, nil
}

// longestWalls returns the wall of the nth longest record of the tree:
// the shortest of the n longest. It holds n walls, in a heap.
func longestWalls(t *explain.SessionTree, n int) time.Duration {
	h := make(wallHeap, 0, n)
	for nd := range t.Nodes() {
		switch {
		case len(h) < n:
			heap.Push(&h, nd.Wall)
		case nd.Wall > h[0]:
			h[0] = nd.Wall
			heap.Fix(&h, 0)
		}
	}
	return h[0]
}

// wallHeap is a min-heap of walls.
type wallHeap []time.Duration

func (h wallHeap) Len() int           { return len(h) }
func (h wallHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h wallHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wallHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *wallHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// verdictCell returns what the record at seq did, as the report shows it:
// "changed", "missed" (it changed nothing, but a record inside it did),
// "hit", or "" where the record does not say.
func verdictCell(t *explain.SessionTree, seq uint64) string {
	n := t.BySeq(seq)
	if n == nil {
		return ""
	}
	if v := n.Verdict(); v != explain.Unknown {
		return v.String()
	}
	return ""
}

// fillCells sets the kind's table columns, the attribute keys its listed
// records have, and each row's cells (formatValue cleans them).
func (k *reportKind) fillCells() {
	column := map[string]int{}
	for _, row := range k.Rows {
		for _, kv := range row.attrs {
			column[kv.key] = 0
		}
	}
	k.Columns = slices.Sorted(maps.Keys(column))
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

// keepSlowestRows adds row to the slowest records, slowest first, if it is
// among the top reportSlowest.
func keepSlowestRows(slowest []reportRecord, row reportRecord) []reportRecord {
	i, _ := slices.BinarySearchFunc(slowest, row, func(a, b reportRecord) int {
		if c := cmp.Compare(b.Wall, a.Wall); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	if i >= reportSlowest {
		return slowest
	}
	row.attrs = nil
	slowest = slices.Insert(slowest, i, row)
	return slowest[:min(len(slowest), reportSlowest)]
}

// details returns what hovering over a record's bar shows: its name, kind,
// stamp, wall time, what it did (did: its verdict, "" where it does not
// say), status, attributes and events, one per line. Each line is cut to
// reportValueMax, and the lines past reportDetailsMax are counted rather
// than shown; each cut adds one to *cut.
func details(kr kindRecord, did string, cut *int) string {
	rec := kr.Record
	first := fmt.Sprintf("%s\n%s · seq %d · at %s · %s", orDash(rec.Name), kr.Kind, kr.Stamp.Seq, formatDuration(kr.Stamp.Offset), formatDuration(rec.Wall))
	if did != "" {
		first += " · " + did
	}
	lines := []string{first}
	if st := formatStatus(rec.Status); st != "" {
		lines = append(lines, "status: "+st)
	}
	for _, kv := range cutAttrs(rec.Attributes, cut) {
		lines = append(lines, kv.key+" = "+kv.value)
	}
	for _, e := range rec.Events {
		line := fmt.Sprintf("event at +%s: %s", formatDuration(e.Offset), e.Name)
		if len(e.Attributes) > 0 {
			line += " (" + formatAttrs(e.Attributes) + ")"
		}
		lines = append(lines, line)
	}
	// Text for the page, not a terminal: html/template escapes it, and
	// clean strips what would confuse the eye (bidi overrides, controls).
	var b strings.Builder
	for i, line := range lines {
		if b.Len() >= reportDetailsMax {
			fmt.Fprintf(&b, "\n… [%d more lines cut]", len(lines)-i)
			*cut += len(lines) - i
			break
		}
		line, c := cutText(cleanLines(line), 2*reportValueMax+len(" = "))
		if c {
			*cut++
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return b.String()
}

// cleanLines cleans each line of s, keeping the line breaks.
func cleanLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return strings.Join(lines, "\n")
}

// formatStatus formats a status as "error: description", "ok", or "" when
// unset.
func formatStatus(st sessions.Status) string {
	switch {
	case st.Code == "" || st.Code == "unset":
		return ""
	case st.Description != "":
		return st.Code + ": " + st.Description
	}
	return st.Code
}

// truncate returns s cut to at most n characters, with an ellipsis when
// cut.
func truncate(s string, n int) string {
	r := []rune(clean(s))
	if len(r) <= n {
		return string(r)
	}
	if n <= 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}
