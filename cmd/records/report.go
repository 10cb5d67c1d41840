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
summary per kind (records, total, mean and longest wall time), the slowest
records, the timeline drawn as bars (one per record, nested as records
nest, overlapping records on separate lanes; hover over a bar for its
details), and a table per kind with its attributes as columns.

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
	Duration time.Duration
	Total    int
	Kinds    []*reportKind
	Slowest  []reportRecord
	Timeline reportTimeline
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
	Wall    time.Duration // total
	Longest time.Duration
	Columns []string // its table's attribute columns: the keys, cleaned
	Rows    []reportRecord
}

// Mean returns the mean wall time of the kind's records.
func (k *reportKind) Mean() time.Duration {
	if k.Count == 0 {
		return 0
	}
	return k.Wall / time.Duration(k.Count)
}

// Hidden returns how many records the table leaves out.
func (k *reportKind) Hidden() int { return k.Count - len(k.Rows) }

// reportRecord is a record as a table row.
type reportRecord struct {
	Kind   string
	Seq    uint64
	Offset time.Duration
	Wall   time.Duration
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
	Omitted       int           // records not drawn
	Shortest      time.Duration // the shortest drawn, when some are omitted
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

// buildReport reads the session's records twice: first to count, sum and
// lay out (a few words per record, and the first rows of each table), then
// to fetch the details of the records drawn. It holds at most
// reportMaxBars records' details, whatever the session's size.
func buildReport(r *sessions.Records, s sessions.Session, prog *progress) (*reportPage, error) {
	kinds, err := r.Kinds()
	if err != nil {
		return nil, err
	}
	in := sessions.InSession(s.ID)
	page := &reportPage{
		CSP:     reportCSP,
		Style:   template.CSS(reportCSS),
		Script:  template.JS(reportJS),
		Session: newReportSession(s),
		Started: formatTime(time.UnixMilli(s.StartedUnixMs)),
	}
	byKind := map[string]*reportKind{}
	var spans []span
	var walls []time.Duration
	for kr, err := range inStampOrder(r, kinds, in) {
		if err != nil {
			return nil, err
		}
		prog.add()
		rec := kr.Record
		page.Total++
		page.Duration = sessionEnd(page.Duration, kr.Stamp, rec.Wall)
		k := byKind[kr.Kind]
		if k == nil {
			k = &reportKind{Name: clean(kr.Kind)}
			byKind[kr.Kind] = k
		}
		k.Count++
		k.Wall += rec.Wall
		k.Longest = max(k.Longest, rec.Wall)
		row := reportRecord{
			Kind:   k.Name,
			Seq:    kr.Stamp.Seq,
			Offset: kr.Stamp.Offset,
			Wall:   rec.Wall,
			Name:   clean(rec.Name),
			Status: clean(formatStatus(rec.Status)),
		}
		if len(k.Rows) < reportMaxRows {
			row.attrs = rec.Attributes
			k.Rows = append(k.Rows, row)
		}
		page.Slowest = keepSlowestRows(page.Slowest, row)
		spans = append(spans, span{seq: kr.Stamp.Seq, start: kr.Stamp.Offset, end: kr.Stamp.Offset + max(rec.Wall, 0)})
		walls = append(walls, rec.Wall)
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

	// Draw the longest records when there are too many to draw.
	drawn := spans
	if len(spans) > reportMaxBars {
		sorted := slices.Clone(walls)
		slices.SortFunc(sorted, func(a, b time.Duration) int { return cmp.Compare(b, a) })
		shortest := sorted[reportMaxBars-1]
		// Of the records as short as the shortest drawn, the first ones
		// fill what is left.
		ties := reportMaxBars - sort.Search(reportMaxBars, func(i int) bool { return sorted[i] <= shortest })
		drawn = make([]span, 0, reportMaxBars)
		for i, sp := range spans {
			switch {
			case walls[i] > shortest:
				drawn = append(drawn, sp)
			case walls[i] == shortest && ties > 0:
				drawn = append(drawn, sp)
				ties--
			}
		}
		page.Timeline.Omitted = len(spans) - len(drawn)
		page.Timeline.Shortest = shortest
	}
	depths := layOut(drawn)
	base := make([]int, len(depths)) // the first row of each lane
	rows := 0
	for l, d := range depths {
		base[l] = rows
		rows += d + 1
	}
	tl := &page.Timeline
	tl.Width = tlWidth
	tl.Height = tlAxis + float64(rows)*tlRow
	tl.Ticks = ticks(page.Duration)
	scale := tlWidth / float64(max(page.Duration, 1))

	// Second pass: the drawn records' details, in stamp order as drawn is.
	prog.setTotal(int64(page.Total))
	next := 0
	for kr, err := range inStampOrder(r, kinds, in) {
		if err != nil {
			return nil, err
		}
		prog.add()
		if next >= len(drawn) || drawn[next].seq != kr.Stamp.Seq {
			continue // not drawn
		}
		sp := drawn[next]
		next++
		x := float64(sp.start) * scale
		w := max(float64(sp.end-sp.start)*scale, 0.5) // a hairline rather than nothing
		y := tlAxis + float64(base[sp.lane]+sp.depth)*tlRow
		bar := reportBar{
			X:       svgNum(x),
			Y:       svgNum(y),
			W:       svgNum(w),
			H:       svgNum(tlBar),
			TextX:   svgNum(x + 3),
			TextY:   svgNum(y + tlBar/2 + 4), // the baseline of 12px text, centred
			Class:   classes[kr.Kind],
			Details: details(kr),
			Seq:     kr.Stamp.Seq,
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
	fmt.Fprintf(&b, "%s\n%s · seq %d · at %s · %s", orDash(rec.Name), kr.Kind, kr.Stamp.Seq, kr.Stamp.Offset, rec.Wall)
	if st := formatStatus(rec.Status); st != "" {
		fmt.Fprintf(&b, "\nstatus: %s", st)
	}
	for _, kv := range rec.Attributes {
		fmt.Fprintf(&b, "\n%s = %s", kv.Key, formatValue(kv.Value))
	}
	for _, e := range rec.Events {
		fmt.Fprintf(&b, "\nevent at +%s: %s", e.Offset, e.Name)
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
		out = append(out, reportTick{X: svgNum(t / float64(d) * tlWidth), Label: time.Duration(t).String()})
	}
	return out
}
