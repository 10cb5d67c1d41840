package render

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/otelrecords/otelrecords/replay"
)

// IsTerminal reports whether w is a terminal. /dev/null and other
// character devices are not: it asks the terminal driver, as term does.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressLineEvery is how often a progress line on a terminal is
// redrawn.
const progressLineEvery = 100 * time.Millisecond

// Repaired says on w, when a replay or an OTLP export repaired
// strings that are not UTF-8 (OTLP carries only UTF-8), how many records
// and session rows it repaired, naming the first records.
func Repaired(w io.Writer, p replay.Progress) {
	if p.Repaired == 0 && p.RepairedSessions == 0 {
		return
	}
	var what []string
	if p.Repaired > 0 {
		first := make([]string, 0, replay.MaxFirstRepaired)
		for _, st := range p.FirstRepaired[:min(p.Repaired, replay.MaxFirstRepaired)] {
			first = append(first, fmt.Sprintf("session %d seq %d", st.Session, st.Seq))
		}
		more := ""
		if p.Repaired > len(first) {
			more = ", ..."
		}
		what = append(what, fmt.Sprintf("%s (%s%s)", Plural(p.Repaired, "record"), strings.Join(first, ", "), more))
	}
	if p.RepairedSessions > 0 {
		what = append(what, Plural(p.RepairedSessions, "session row"))
	}
	fmt.Fprintf(w, "records: %s held strings that are not UTF-8, which OTLP cannot carry: sent with U+FFFD in place of each run of invalid bytes\n", strings.Join(what, " and "))
}

// ProgressLine redraws one line of progress on a terminal, and does
// nothing elsewhere: a log file or a pipe gets only the final summary on
// standard output.
type ProgressLine struct {
	w    io.Writer // nil when not a terminal
	last time.Time
	drew bool
}

// NewProgressLine returns a progress line on w, which draws only when w
// is a terminal.
func NewProgressLine(w io.Writer) *ProgressLine {
	if !IsTerminal(w) {
		return &ProgressLine{}
	}
	return &ProgressLine{w: w}
}

// Show draws how far a replay got, when a redraw is due.
func (l *ProgressLine) Show(p replay.Progress) {
	if l.w == nil || time.Since(l.last) < progressLineEvery {
		return
	}
	l.last, l.drew = time.Now(), true
	// \r returns to the start of the line, \x1b[K clears what a longer
	// line left.
	fmt.Fprintf(l.w, "\rreplay: session %d of %d, %d spans sent\x1b[K", p.Sessions, max(p.Total, p.Sessions), p.Spans)
}

// Done clears the line, if one was drawn.
func (l *ProgressLine) Done() {
	if l.drew {
		fmt.Fprint(l.w, "\r\x1b[K")
	}
}
