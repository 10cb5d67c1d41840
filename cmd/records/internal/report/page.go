package report

import (
	"fmt"
	"html/template"
	"io"
	"time"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// Page is one session's report, as the template shows it (Build makes
// it, Write writes it). Every text in it from the store went through
// render.Clean, as on a terminal: html/template makes markup inert, and
// Clean keeps control and bidirectional characters from reordering or
// hiding what the page shows.
type Page struct {
	CSP      string
	Style    template.CSS
	Script   template.JS
	Session  session
	Started  string
	Duration dur
	Total    int
	Kinds    []*kind
	// Tallied says whether the session has a tally of what it let go
	// (explain/summary.Report.Tallied).
	Tallied  bool
	Slowest  []record
	Critical path
	Timeline timeline
	// Cut counts the values, keys and detail lines shown cut, or left
	// out, for their length (see cut.go).
	Cut int
	// Groups are the session's roots by kind and name, when it has too
	// many to draw each (summary.GroupRoots); nil otherwise.
	Groups []group
	// RecordLink, when not "", makes each seq the page lists a link to
	// RecordLink followed by the seq: a web view's page of the record.
	// The report written to a file links nowhere.
	RecordLink string
}

// dur is a duration as the page shows it: to 3 significant digits, as
// the commands print durations.
type dur time.Duration

func (d dur) String() string { return render.Duration(time.Duration(d)) }

// path is the session's critical path: the records that bounded its
// duration, in path order, each with the time it alone held the session
// up; at most summary.DefaultMaxRows of them, those that held it up most.
type path struct {
	Steps  []step
	Total  int // records on the path
	Hidden int // records on the path the table leaves out
}

// step is a record on the critical path, as a table row.
type step struct {
	Seq      uint64
	Kind     string
	Name     string
	Indent   string // non-breaking spaces, two per level it lies deep in the session's tree
	Offset   dur
	Wall     dur
	Critical dur
}

// Write writes the page: one HTML file, its style and script inline.
func (p *Page) Write(w io.Writer) error { return page.Execute(w, p) }

// WriteBody writes what the page shows, without the document around it,
// its style or its script: the session's header, timeline, summary and
// tables, for a page of a web view to hold (records serve), which
// serves the style and script (Style, Script) as files of their own.
func (p *Page) WriteBody(w io.Writer) error { return page.ExecuteTemplate(w, "body", p) }

// session is the session's row, as the page shows it.
type session struct {
	ID       sessions.SessionID
	Label    string
	Process  int
	Platform string // os/arch
	Version  string
	Resource []attr
}

// attr is an attribute, as the page shows it.
type attr struct{ Key, Value string }

func newSession(s sessions.Session) session {
	rs := session{ID: s.ID, Label: render.Clean(s.Label), Process: s.Process, Version: render.Clean(s.Version)}
	if s.OS != "" {
		rs.Platform = render.Clean(s.OS + "/" + s.Arch)
	}
	for _, kv := range s.Resource {
		rs.Resource = append(rs.Resource, attr{render.Clean(kv.Key), render.Value(kv.Value)})
	}
	return rs
}

// kind is one kind's summary and table.
type kind struct {
	Name    string
	Class   string // the CSS class that colours its bars
	Count   int
	Wall    dur // how long at least one of its records was open: time counted once
	Longest dur
	Columns []string // its table's attribute columns: the keys, cleaned
	Rows    []record
	sum     time.Duration // of its records' walls, for the mean
	did     [4]int        // its records by verdict (explain.Verdict)
	// Tallied is how many of its records the session let go, counted in
	// its tally (every one a hit), and TalliedMedian their median wall.
	Tallied       int64
	TalliedMedian dur
}

// AllHits is its hits, kept and tallied.
func (k *kind) AllHits() int64 { return int64(k.Hits()) + k.Tallied }

// HitRate says how many of the kind's lookups hit, kept and tallied hits
// against its kept records that did not: "12/13 (92%)"; "" with no hit.
func (k *kind) HitRate() string {
	if k.AllHits() == 0 || k.Name == sessions.MarksKind { // marks are phases, not lookups
		return ""
	}
	n := int64(k.Count) + k.Tallied
	return fmt.Sprintf("%d/%d (%.0f%%)", k.AllHits(), n, 100*float64(k.AllHits())/float64(n))
}

// Changed, Missed and Hits return how many of the kind's records changed
// something, missed (changed nothing, but a record inside them did), and
// were hits (nothing changed in them or inside them); Known says whether
// any of its records says what it did (records of older stores do not).
func (k *kind) Changed() int { return k.did[explain.Done] }
func (k *kind) Missed() int  { return k.did[explain.Miss] }
func (k *kind) Hits() int    { return k.did[explain.Hit] }
func (k *kind) Known() bool  { return k.did[explain.Unknown] < k.Count || k.Tallied > 0 }

// Mean returns the mean wall time of the kind's records.
func (k *kind) Mean() dur {
	if k.Count == 0 {
		return 0
	}
	return dur(k.sum / time.Duration(k.Count))
}

// Hidden returns how many records the table leaves out.
func (k *kind) Hidden() int { return k.Count - len(k.Rows) }

// record is a record as a table row.
type record struct {
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
func (r record) Short() bool { return utf8.RuneCountInString(r.Name) <= shortName }

// timeline is the timeline's SVG drawing. Coordinates are in the
// units of its viewBox, Width wide; the page scales it to fit.
type timeline struct {
	Width, Height float64
	Bars          []bar
	Ticks         []tick
	Omitted       int // records not drawn
	Shortest      dur // the shortest drawn, when some are omitted
	Critical      int // bars on the critical path
	// GroupedRoots is how many roots are drawn grouped, not whole, in
	// Groups ("3 groups"), and GroupLabels name the groups' rows.
	GroupedRoots int
	Groups       string
	GroupLabels  []groupLabel
}

// bar is one record's bar.
type bar struct {
	X, Y, W, H string // formatted for the SVG
	TextX      string
	TextY      string
	Class      string
	Label      string // shown inside the bar, when it fits; else ""
	Details    string // shown on hover
	Seq        uint64
	Critical   bool // on the critical path
}

// tick is a mark on the time axis.
type tick struct {
	X     string
	Label string
}

// group is a group of roots that share a kind and a name, as the page's
// table lists it.
type group struct {
	Kind, Name       string
	Class            string
	Count            int
	Median, P90, Max dur
	Slowest          uint64 // the seq of its slowest root
}

// groupLabel names a group's row of the timeline.
type groupLabel struct {
	X, Y  string
	Label string
}
