package main

import (
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// The report's page, and what it carries inline: one file, nothing to
// fetch.
var (
	//go:embed report/report.html
	reportHTML string
	//go:embed report/report.css
	reportCSS string
	//go:embed report/report.js
	reportJS string
)

// reportTemplate is parsed once. html/template escapes every value it
// inserts for where it goes (text, attribute, SVG), so a record field such
// as <img src=x onerror=alert(1)> shows as text and runs nothing.
var reportTemplate = template.Must(template.New("report").Parse(reportHTML))

// reportCSP is the page's Content Security Policy: nothing may be fetched,
// and only the page's own style and script, named by their hashes, may
// run. Should anything escape the escaping, the browser still runs
// nothing of it.
var reportCSP = fmt.Sprintf("default-src 'none'; img-src data:; style-src '%s'; script-src '%s'; base-uri 'none'; form-action 'none'",
	cspHash(reportCSS), cspHash(reportJS))

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Report limits: a page stays quick to open whatever the session's size.
const (
	// reportMaxBars is how many records the timeline draws at most: the
	// longest ones, when the session has more.
	reportMaxBars = 20_000
	// reportMaxRows is how many records each kind's table lists at most:
	// the first ones, in stamp order.
	reportMaxRows = 500
	// reportSlowest is how many of the slowest records the summary lists.
	reportSlowest = 10
)

func (a *app) reportCommand() *cobra.Command {
	var (
		output  string
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "report [--session ID] -o report.html",
		Short: "Write one session as a self-contained HTML report",
		Long: `Write a session (the newest, or the one --session names) as one HTML file
that any browser opens offline: no network, no external script or style.

It shows the session (id, label, start, process, duration, Resource), a
summary per kind (records; time, counted once however its records nest or
overlap; mean and longest wall time), the critical path (the chain of
records that bounded the session's duration), the slowest records, the
timeline drawn as bars (one per record, under the record of its parent
span, records that ran at once on rows of their own, the critical path
outlined; hover over a bar for its details), and a table per kind with its
attributes as columns.

A timeline draws at most 20,000 bars (the longest records), and a table
lists at most 500 records of its kind; the page says what it left out.
Every record field is escaped, and the page's Content Security Policy lets
nothing but its own script run. Without -o the page goes to standard
output. Progress is shown on standard error when it is a terminal.`,
		Example: `  records report -o report.html
  records report --session 1735787045006000000 -o build.html
  records report --dir ./build/records > report.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			return a.read(cmd, func(r *sessions.Records) error {
				s, err := pickSession(r, session)
				if err != nil {
					return err
				}
				prog := newProgress(cmd.ErrOrStderr(), "report")
				defer prog.finish()
				page, err := buildReport(r, s, prog)
				if err != nil {
					return err
				}
				return writeOutput(cmd, output, func(w io.Writer) error { return page.write(w) })
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this `file` (default: standard output)")
	session.register(cmd, "report on the session with this `id` (default: the newest)")
	return cmd
}

// reportPage is what the template shows. Every text in it from the store
// went through clean, as on a terminal: html/template makes markup inert,
// and clean keeps control and bidirectional characters from reordering or
// hiding what the page shows.
type reportPage struct {
	CSP      string
	Style    template.CSS
	Script   template.JS
	Session  reportSession
	Started  string
	Duration dur
	Total    int
	Kinds    []*reportKind
	Slowest  []reportRecord
	Critical reportPath
	Timeline reportTimeline
}

// dur is a duration as the page shows it: to 3 significant digits, as
// the commands print durations.
type dur time.Duration

func (d dur) String() string { return formatDuration(time.Duration(d)) }

// reportPath is the session's critical path: the records that bounded its
// duration, in path order, each with the time it alone held the session
// up; at most reportMaxRows of them, those that held it up most.
type reportPath struct {
	Steps  []reportStep
	Total  int // records on the path
	Hidden int // records on the path the table leaves out
}

// reportStep is a record on the critical path, as a table row.
type reportStep struct {
	Seq      uint64
	Kind     string
	Name     string
	Indent   string // non-breaking spaces, two per level it lies deep in the session's tree
	Offset   dur
	Wall     dur
	Critical dur
}

func (p *reportPage) write(w io.Writer) error { return reportTemplate.Execute(w, p) }

// reportSession is the session's row, as the page shows it.
type reportSession struct {
	ID       sessions.SessionID
	Label    string
	Process  int
	Platform string // os/arch
	Version  string
	Resource []reportAttr
}

// reportAttr is an attribute, as the page shows it.
type reportAttr struct{ Key, Value string }

func newReportSession(s sessions.Session) reportSession {
	rs := reportSession{ID: s.ID, Label: clean(s.Label), Process: s.Process, Version: clean(s.Version)}
	if s.OS != "" {
		rs.Platform = clean(s.OS + "/" + s.Arch)
	}
	for _, kv := range s.Resource {
		rs.Resource = append(rs.Resource, reportAttr{clean(kv.Key), formatValue(kv.Value)})
	}
	return rs
}

// reportKind is one kind's summary and table.
type reportKind struct {
	Name    string
	Class   string // the CSS class that colours its bars
	Count   int
	Wall    dur // how long at least one of its records was open: time counted once
	Longest dur
	Columns []string // its table's attribute columns: the keys, cleaned
	Rows    []reportRecord
	sum     time.Duration // of its records' walls, for the mean
}

// Mean returns the mean wall time of the kind's records.
func (k *reportKind) Mean() dur {
	if k.Count == 0 {
		return 0
	}
	return dur(k.sum / time.Duration(k.Count))
}

// Hidden returns how many records the table leaves out.
func (k *reportKind) Hidden() int { return k.Count - len(k.Rows) }

// reportRecord is a record as a table row.
type reportRecord struct {
	Kind   string
	Seq    uint64
	Offset dur
	Wall   dur
	Name   string
	Status string
	Cells  []string // the values of the kind's Columns, "" where it has none
	attrs  sessions.Attrs
}

// reportTimeline is the timeline's SVG drawing. Coordinates are in the
// units of its viewBox, Width wide; the page scales it to fit.
type reportTimeline struct {
	Width, Height float64
	Bars          []reportBar
	Ticks         []reportTick
	Omitted       int // records not drawn
	Shortest      dur // the shortest drawn, when some are omitted
	Critical      int // bars on the critical path
}

// reportBar is one record's bar.
type reportBar struct {
	X, Y, W, H string // formatted for the SVG
	TextX      string
	TextY      string
	Class      string
	Label      string // shown inside the bar, when it fits; else ""
	Details    string // shown on hover
	Seq        uint64
	Critical   bool // on the critical path
}

// reportTick is a mark on the time axis.
type reportTick struct {
	X     string
	Label string
}

// Timeline drawing, in viewBox units.
const (
	tlWidth      = 1200.0
	tlAxis       = 24.0 // the time axis, above the bars
	tlRow        = 24.0 // one row of bars
	tlBar        = 20.0 // a bar's height, leaving a gap below it
	tlCharWidth  = 7.2  // the width of a label's character, roughly
	tlMinLabelW  = 40.0 // the narrowest bar that gets a label
	tlTickTarget = 8    // about how many ticks the axis has
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
	for kr, err := range explain.InStampOrder(r, s.ID, kinds) {
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
		if len(k.Rows) < reportMaxRows {
			row.attrs = rec.Attributes
			k.Rows = append(k.Rows, row)
		}
		page.Slowest = keepSlowestRows(page.Slowest, row)
		walls = append(walls, rec.Wall)
		seqs = append(seqs, kr.Stamp.Seq)
		// The tree needs the stamp, the kind and the span ids; the name
		// is kept for the critical path's table.
		kr.Record = sessions.Record{Name: rec.Name, Wall: rec.Wall, TraceID: rec.TraceID, SpanID: rec.SpanID, ParentSpanID: rec.ParentSpanID}
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
	// A bar is drawn half a unit wide at least: as long, for the layout.
	places, rows := layOutTree(tree, drawn, max(sum.End/(2*tlWidth), 1))
	tl := &page.Timeline
	tl.Width = tlWidth
	tl.Height = tlAxis + float64(rows)*tlRow
	tl.Ticks = ticks(sum.End)
	scale := tlWidth / float64(max(sum.End, 1))

	// Second pass: the drawn records' details.
	prog.setTotal(int64(page.Total))
	for kr, err := range explain.InStampOrder(r, s.ID, kinds) {
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
		w := max(float64(max(kr.Record.Wall, 0))*scale, 0.5) // a hairline rather than nothing
		y := tlAxis + float64(row)*tlRow
		bar := reportBar{
			X:        svgNum(x),
			Y:        svgNum(y),
			W:        svgNum(w),
			H:        svgNum(tlBar),
			TextX:    svgNum(x + 3),
			TextY:    svgNum(y + tlBar/2 + 4), // the baseline of 12px text, centred
			Class:    classes[kr.Kind],
			Details:  details(kr),
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
	return page, nil
}

// fillCells sets the kind's table columns, the attribute keys its listed
// records have, and each row's cells (formatValue cleans them).
func (k *reportKind) fillCells() {
	keys := map[string]bool{}
	for _, row := range k.Rows {
		for _, kv := range row.attrs {
			keys[kv.Key] = true
		}
	}
	sorted := slices.Sorted(maps.Keys(keys))
	k.Columns = make([]string, len(sorted))
	for i, key := range sorted {
		k.Columns[i] = clean(key)
	}
	for i := range k.Rows {
		row := &k.Rows[i]
		row.Cells = make([]string, len(sorted))
		for j, key := range sorted {
			if v, ok := row.attrs.Get(key); ok {
				row.Cells[j] = formatValue(v)
			}
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
// stamp, wall time, status, attributes and events, one per line.
func details(kr kindRecord) string {
	rec := kr.Record
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s · seq %d · at %s · %s", orDash(rec.Name), kr.Kind, kr.Stamp.Seq, formatDuration(kr.Stamp.Offset), formatDuration(rec.Wall))
	if st := formatStatus(rec.Status); st != "" {
		fmt.Fprintf(&b, "\nstatus: %s", st)
	}
	for _, kv := range rec.Attributes {
		fmt.Fprintf(&b, "\n%s = %s", kv.Key, formatValue(kv.Value))
	}
	for _, e := range rec.Events {
		fmt.Fprintf(&b, "\nevent at +%s: %s", formatDuration(e.Offset), e.Name)
		if len(e.Attributes) > 0 {
			fmt.Fprintf(&b, " (%s)", formatAttrs(e.Attributes))
		}
	}
	// Text for the page, not a terminal: html/template escapes it, and
	// clean strips what would confuse the eye (bidi overrides, controls).
	return cleanLines(b.String())
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
func newReportPath(t *explain.SessionTree, path []explain.Step) reportPath {
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
		p.Steps[i] = reportStep{
			Seq:      st.Seq,
			Kind:     clean(n.Kind),
			Name:     clean(n.Record.Name),
			Indent:   strings.Repeat("\u00a0\u00a0", min(n.Depth, maxIndent)),
			Offset:   dur(n.Stamp.Offset),
			Wall:     dur(n.Record.Wall),
			Critical: dur(st.Critical),
		}
	}
	return p
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
// many rows there are. It walks the tree once, without recursion.
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
		cur    *block
		occ    [][]interval // the current block's rows, each sorted by start
		// below is the row a record's children start from: the one below
		// the record, or below its nearest drawn ancestor when not drawn.
		below = map[uint64]int{}
	)
	for n := range t.Walk() {
		if n.Depth == 0 {
			cur = &block{start: math.MaxInt64, end: math.MinInt64}
			blocks = append(blocks, cur)
			occ = occ[:0]
		}
		from := 0
		if p := t.Parent(n); p != nil {
			from = below[p.Stamp.Seq]
		}
		next := from
		if drawn[n.Stamp.Seq] {
			iv := interval{n.Stamp.Offset, n.Stamp.Offset + max(n.Record.Wall, minWidth)}
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
			cur.places = append(cur.places, place{n.Stamp.Seq, row})
			cur.rows = max(cur.rows, row+1)
			cur.start, cur.end = min(cur.start, iv.start), max(cur.end, iv.end)
			next = row + 1
		}
		for range t.Children(n) { // only records with children are asked
			below[n.Stamp.Seq] = next
			break
		}
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
