package main

import (
	"fmt"
	"io"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/tracefile"
)

// How progress is shown. A command that ends within progressDelay shows
// nothing at all, so everyday runs do not flash a line; past it the line
// is redrawn at most every progressRedraw. The clock is read once every
// progressCheckEvery records, so counting costs next to nothing.
var (
	progressDelay  = time.Second
	progressRedraw = 200 * time.Millisecond
)

const progressCheckEvery = 4096

// progress reports on long work (an export or a report over a million
// records) with one line on standard error, redrawn in place: but only when
// standard error is a terminal. Redirected to a file or a pipe, standard
// error gets nothing, so logs and scripts see no carriage returns. A nil
// *progress is valid, and does nothing.
type progress struct {
	w     io.Writer
	what  string // what is being done, e.g. "export"
	total int64  // records to go through, or 0 when not known yet
	done  int64
	start time.Time
	drawn time.Time // when the line was last drawn; zero if never
}

// newProgress returns a progress line for work called what, written to w
// when w is a terminal, and nil (which does nothing) otherwise.
func newProgress(w io.Writer, what string) *progress {
	if !render.IsTerminal(w) {
		return nil
	}
	return &progress{w: w, what: what, start: time.Now()}
}

// setTotal says how many records the work goes through, from now on: a
// two-pass command learns it at the end of its first pass, and starts its
// count again.
func (p *progress) setTotal(total int64) {
	if p == nil {
		return
	}
	p.total, p.done = total, 0
}

// add counts one record done, and redraws the line when it is due.
func (p *progress) add() {
	if p == nil {
		return
	}
	if p.done++; p.done%progressCheckEvery == 0 {
		p.update(p.done)
	}
}

// update says how many records are done, and redraws the line when it is
// due. Work that counts in batches calls it once a batch.
func (p *progress) update(done int64) {
	if p == nil {
		return
	}
	p.done = done
	now := time.Now()
	if now.Sub(p.start) < progressDelay || now.Sub(p.drawn) < progressRedraw {
		return
	}
	p.drawn = now
	p.draw()
}

func (p *progress) draw() {
	// \r returns to the start of the line; \x1b[K clears what a longer
	// line before left behind.
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r%s: %d of %d records (%d%%)\x1b[K", p.what, p.done, p.total, p.done*100/p.total)
	} else {
		fmt.Fprintf(p.w, "\r%s: %d records read\x1b[K", p.what, p.done)
	}
}

// tell says how far an export (package tracefile) got: a total that
// changes starts the count again.
func (p *progress) tell(tp tracefile.Progress) {
	if p == nil {
		return
	}
	if tp.Total != p.total {
		p.setTotal(tp.Total)
	}
	p.update(tp.Records)
}

// finish clears the line, if one was drawn, so what is printed next starts
// on a clean line.
func (p *progress) finish() {
	if p == nil || p.drawn.IsZero() {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
}
