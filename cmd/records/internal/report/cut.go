package report

import (
	"fmt"
	"strings"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

// A page holds what it shows cut: a value may be megabytes (a record is up
// to 15 MiB), and a page of 20,000 bars of whole values would be
// gigabytes, in memory and in the browser. Cut text ends with a marker
// saying how much was left out (summary.Cut), and the page counts the
// values it cut, to say so.
const (
	// ValueMax is the most bytes of one attribute value, or key, a page
	// shows.
	ValueMax = 1 << 10
	// DetailsMax is the most bytes of a bar's details (its hover text):
	// the attributes and events past it are left out.
	DetailsMax = 4 << 10
)

// cutAttr is an attribute as the page holds it: its key and its formatted
// value, each cut to ValueMax.
type cutAttr struct {
	key, value string
}

// cutAttrs formats attrs for the page, cut, and adds how many keys and
// values it cut to *cut.
func cutAttrs(attrs sessions.Attrs, cut *int) []cutAttr {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]cutAttr, len(attrs))
	for i, kv := range attrs {
		k, kc := summary.Cut(render.Clean(kv.Key), ValueMax)
		v, vc := summary.Cut(render.Value(kv.Value), ValueMax)
		if kc {
			*cut++
		}
		if vc {
			*cut++
		}
		out[i] = cutAttr{strings.Clone(k), strings.Clone(v)}
	}
	return out
}

// details returns what hovering over a record's bar shows: its name, kind,
// stamp, wall time, what it did (did: its verdict, "" where it does not
// say), status, attributes and events, one per line. Each line is cut to
// ValueMax, and the lines past DetailsMax are counted rather than shown;
// each cut adds one to *cut.
func details(kr sessions.KindRecord, did string, cut *int) string {
	rec := kr.Record
	first := fmt.Sprintf("%s\n%s · seq %d · at %s · %s", render.OrDash(rec.Name), kr.Kind, kr.Stamp.Seq, render.Duration(kr.Stamp.Offset), render.Duration(rec.Wall))
	if did != "" {
		first += " · " + did
	}
	lines := []string{first}
	if st := render.Status(rec.Status); st != "" {
		lines = append(lines, "status: "+st)
	}
	for _, kv := range cutAttrs(rec.Attributes, cut) {
		lines = append(lines, kv.key+" = "+kv.value)
	}
	for _, e := range rec.Events {
		line := fmt.Sprintf("event at +%s: %s", render.Duration(e.Offset), e.Name)
		if len(e.Attributes) > 0 {
			line += " (" + render.Attrs(e.Attributes) + ")"
		}
		lines = append(lines, line)
	}
	// Text for the page, not a terminal: html/template escapes it, and
	// Clean strips what would confuse the eye (bidi overrides, controls).
	var b strings.Builder
	for i, line := range lines {
		if b.Len() >= DetailsMax {
			fmt.Fprintf(&b, "\n… [%d more lines cut]", len(lines)-i)
			*cut += len(lines) - i
			break
		}
		line, c := summary.Cut(cleanLines(line), 2*ValueMax+len(" = "))
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
		lines[i] = render.Clean(l)
	}
	return strings.Join(lines, "\n")
}

// truncate returns s cut to at most n characters, with an ellipsis when
// cut.
func truncate(s string, n int) string {
	r := []rune(render.Clean(s))
	if len(r) <= n {
		return string(r)
	}
	if n <= 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}
