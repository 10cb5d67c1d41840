package main

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// buildReport reads the session's records twice: first to count, sum,
// build the session's tree and find its critical path (the tree holds
// each record's stamp and ids, not its attributes or events, and the first
// rows of each table), then to fetch the details of the records drawn. It
// holds at most reportMaxBars records' details, whatever the session's
// size.
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
	var (
		tally explain.Tally
		b     explain.TreeBuilder
		walls []time.Duration // in stamp order
		seqs  []uint64        // of the same records
	)
	for kr, err := range r.InStampOrder(kinds, sessions.InSession(s.ID)) {
		if err != nil {
			return nil, err
		}
		prog.add()
		rec := kr.Record
		page.Total++
		tally.Add(kr)
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
		if e := effectOf(&rec); e != nil {
			row.Effect = *e
		}
		if len(k.Rows) < reportMaxRows {
			row.attrs = cutAttrs(rec.Attributes, &page.Cut)
			k.Rows = append(k.Rows, row)
		}
		page.Slowest = keepSlowestRows(page.Slowest, row)
		walls = append(walls, rec.Wall)
		seqs = append(seqs, kr.Stamp.Seq)
		// The tree needs the stamp, the kind and the span ids; the name
		// is kept for the critical path's table.
		kr.Record = compactRecord(rec)
		if err := b.Add(kr); err != nil {
			return nil, err
		}
	}
	tree := b.Tree()
	sum := tally.Summary()
	page.Duration = dur(sum.End)
	for _, ks := range sum.Kinds {
		byKind[ks.Kind].Wall = dur(ks.Wall)
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
	page.Critical = newReportPath(tree, path)

	// Draw the longest records when there are too many to draw.
	drawn := make(map[uint64]bool, min(len(walls), reportMaxBars))
	if len(walls) > reportMaxBars {
		sorted := slices.Clone(walls)
		slices.SortFunc(sorted, func(a, b time.Duration) int { return cmp.Compare(b, a) })
		shortest := sorted[reportMaxBars-1]
		// Of the records as short as the shortest drawn, the first ones
		// fill what is left.
		ties := reportMaxBars - sort.Search(reportMaxBars, func(i int) bool { return sorted[i] <= shortest })
		for i, w := range walls {
			switch {
			case w > shortest:
				drawn[seqs[i]] = true
			case w == shortest && ties > 0:
				drawn[seqs[i]] = true
				ties--
			}
		}
		page.Timeline.Omitted = len(walls) - len(drawn)
		page.Timeline.Shortest = dur(shortest)
	} else {
		for _, seq := range seqs {
			drawn[seq] = true
		}
	}
	// A session with too many roots to draw each draws the slowest whole,
	// and the others grouped.
	expanded := groupRoots(page, tree, path, classes, drawn)
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
			Details:  details(kr, &page.Cut),
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
// stamp, wall time, status, attributes and events, one per line. Each
// line is cut to reportValueMax, and the lines past reportDetailsMax are
// counted rather than shown; each cut adds one to *cut.
func details(kr kindRecord, cut *int) string {
	rec := kr.Record
	first := fmt.Sprintf("%s\n%s · seq %d · at %s · %s", orDash(rec.Name), kr.Kind, kr.Stamp.Seq, formatDuration(kr.Stamp.Offset), formatDuration(rec.Wall))
	if e := effectOf(&rec); e != nil {
		first += " · " + *e
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
