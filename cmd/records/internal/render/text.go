// Package render is the records command's text: what a person reads on a
// terminal. Every field printed goes through Clean (a store travels
// between machines, and is read as untrusted input), tables are aligned
// within bounds (Table), and durations, times, attributes and values are
// formatted one way everywhere. The JSON the command prints is package
// api's; the HTML report package report's.
package render

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/sessions"
)

// Clean returns s fit for a terminal. Records carry whatever the recorded
// program put in its spans, and a store may come from anywhere, so every
// field printed as text goes through here: control characters (C0, DEL,
// C1 — escape sequences, tabs and newlines included) are removed, and so
// are line separators and the bidirectional formatting characters that
// reorder what follows them; bytes that are not UTF-8 become U+FFFD.
func Clean(s string) string {
	if !needsCleaning(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // range turns each invalid byte into U+FFFD
		if !unsafeRune(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// CleanMessage returns a message for standard error fit for a terminal:
// an error or a warning, which may name a file from the store's directory
// (a damaged one, a spool file set aside) or carry a library's words. Each
// line is cleaned as Clean cleans a cell; a line after the first is
// indented, so no line of it can pass for one of the command's own.
func CleanMessage(s string) string {
	if !strings.Contains(s, "\n") {
		return Clean(s)
	}
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = Clean(lines[i])
	}
	return strings.Join(lines, "\n  ")
}

func needsCleaning(s string) bool {
	for i, r := range s {
		if unsafeRune(r) {
			return true
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return true
			}
		}
	}
	return false
}

func unsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u2028', r == '\u2029': // line and paragraph separators
		return true
	case r == '\u061c', r == '\u200e', r == '\u200f', // bidi marks
		'\u202a' <= r && r <= '\u202e', // bidi embeddings and overrides
		'\u2066' <= r && r <= '\u2069': // bidi isolates
		return true
	}
	return false
}

// Table writes rows as aligned columns. Every cell is cleaned, so a caller
// cannot forget to. Call Flush when done (and, for long outputs, now and
// then: a tabwriter holds everything until it is flushed).
//
// A column is as wide as its widest cell among the rows aligned together,
// and every one of those rows is padded to it: one record's 10 MB name
// would pad a thousand rows to 10 MB each. So a row with a cell wider than
// alignedWidth (the last cell, never padded, aside) is written on its own,
// unaligned, between flushes: a row's padding stays within alignedWidth a
// column.
//
// The rows a tabwriter holds are flushed too once they hold tableHoldBytes
// (a record's last cell, its attributes, may be megabytes): a table holds
// a bounded amount whatever its rows, and aligns the rows of each block.
type Table struct {
	tw   *tabwriter.Writer
	held int // bytes written since the last flush
}

// alignedWidth is the widest cell, in bytes, that a table aligns with the
// rows around it.
const alignedWidth = 128

// tableHoldBytes is how many bytes of rows a table holds before it flushes
// them.
const tableHoldBytes = 1 << 20

// NewTable returns a table writing to w.
func NewTable(w io.Writer) *Table {
	return &Table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// Row writes one row of cells.
func (t *Table) Row(cells ...string) error {
	cells = slices.Clone(cells)
	wide := false
	for i := range cells {
		cells[i] = Clean(cells[i])
		wide = wide || i < len(cells)-1 && len(cells[i]) > alignedWidth
	}
	if wide {
		if err := t.tw.Flush(); err != nil {
			return err
		}
	}
	for i, c := range cells {
		if i > 0 {
			if _, err := io.WriteString(t.tw, "\t"); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(t.tw, c); err != nil {
			return err
		}
		t.held += len(c) + 1
	}
	if _, err := io.WriteString(t.tw, "\n"); err != nil {
		return err
	}
	if wide || t.held >= tableHoldBytes {
		return t.Flush()
	}
	return nil
}

// Flush writes the rows held.
func (t *Table) Flush() error {
	t.held = 0
	return t.tw.Flush()
}

// OrDash returns s, or "-" for an empty cell, so every column has a value
// and columns stay apart for the eye and for tools like awk.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Time formats a wall-clock instant in UTC, to the millisecond, so
// output does not depend on the machine reading the store.
func Time(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Attrs formats attributes as space-separated key=value pairs, in the
// order given (key order, once read back).
func Attrs(attrs sessions.Attrs) string {
	var b strings.Builder
	for i, kv := range attrs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Clean(kv.Key))
		b.WriteByte('=')
		b.WriteString(Value(kv.Value))
	}
	return b.String()
}

// Value formats an attribute value for people: numbers and booleans
// as Go prints them, strings bare unless they would read ambiguously in a
// key=value list, slices in brackets.
func Value(v sessions.Value) string {
	switch x := v.Any().(type) {
	case string:
		return String(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = String(s)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return v.String()
}

// String cleans s, then quotes it if it is empty or holds a space,
// quote, '=' or bracket, so a key=value list reads one way only.
func String(s string) string {
	s = Clean(s)
	if s == "" || strings.ContainsAny(s, " \"'=[]\\") || strings.ContainsFunc(s, unicode.IsSpace) {
		return strconv.Quote(s)
	}
	return s
}

// Duration formats d for people, to 3 significant digits: 33.2ms
// rather than 33.190467ms. Every duration a command prints as text goes
// through here; JSON output keeps the nanoseconds.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	// Round to the third significant digit: a duration of n digits (in
	// nanoseconds) keeps its first three.
	unit := time.Duration(1)
	for v := d; v >= 1000; v /= 10 {
		unit *= 10
	}
	if unit > 1 {
		d = d.Round(unit)
	}
	return d.String()
}
