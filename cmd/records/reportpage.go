package main

import (
	_ "embed"
	"html/template"
	"io"
	"time"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

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
	// Cut counts the values, keys and detail lines shown cut, or left
	// out, for their length (see cut.go).
	Cut int
	// Groups are the session's roots by kind and name, when it has too
	// many to draw each (see groupRoots); nil otherwise.
	Groups []reportGroup
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
	did     [4]int        // its records by verdict (explain.Verdict)
}

// Changed, Missed and Hits return how many of the kind's records changed
// something, missed (changed nothing, but a record inside them did), and
// were hits (nothing changed in them or inside them); Known says whether
// any of its records says what it did (records of older stores do not).
func (k *reportKind) Changed() int { return k.did[explain.Done] }
func (k *reportKind) Missed() int  { return k.did[explain.Miss] }
func (k *reportKind) Hits() int    { return k.did[explain.Hit] }
func (k *reportKind) Known() bool  { return k.did[explain.Unknown] < k.Count }

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
	Effect string    // what it did: changed, missed, hit, or "" where the record does not say
	Cells  []string  // the values of the kind's Columns, "" where it has none
	attrs  []cutAttr // until fillCells makes Cells of them
}

// shortName is the longest name a kind's table keeps on one line.
const shortName = 60

// Short reports whether the record's name is short enough to keep on one
// line, however many columns its table has: a name broken over three lines
// (GET / look / up) reads as three.
func (r reportRecord) Short() bool { return utf8.RuneCountInString(r.Name) <= shortName }

// reportTimeline is the timeline's SVG drawing. Coordinates are in the
// units of its viewBox, Width wide; the page scales it to fit.
type reportTimeline struct {
	Width, Height float64
	Bars          []reportBar
	Ticks         []reportTick
	Omitted       int // records not drawn
	Shortest      dur // the shortest drawn, when some are omitted
	Critical      int // bars on the critical path
	// GroupedRoots is how many roots are drawn grouped, not whole, in
	// Groups ("3 groups"), and GroupLabels name the groups' rows.
	GroupedRoots int
	Groups       string
	GroupLabels  []reportGroupLabel
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
