package main

import (
	"encoding/json"
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

// clean returns s fit for a terminal. Records carry whatever the recorded
// program put in its spans, and a store may come from anywhere, so every
// field printed as text goes through here: control characters (C0, DEL,
// C1 — escape sequences, tabs and newlines included) are removed, and so
// are line separators and the bidirectional formatting characters that
// reorder what follows them; bytes that are not UTF-8 become U+FFFD.
func clean(s string) string {
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

// table writes rows as aligned columns. Every cell is cleaned, so a caller
// cannot forget to. Call flush when done (and, for long outputs, now and
// then: a tabwriter holds everything until it is flushed).
//
// A column is as wide as its widest cell among the rows aligned together,
// and every one of those rows is padded to it: one record's 10 MB name
// would pad a thousand rows to 10 MB each. So a row with a cell wider than
// alignedWidth (the last cell, never padded, aside) is written on its own,
// unaligned, between flushes: a row's padding stays within alignedWidth a
// column.
type table struct{ tw *tabwriter.Writer }

// alignedWidth is the widest cell, in bytes, that a table aligns with the
// rows around it.
const alignedWidth = 128

func newTable(w io.Writer) *table {
	return &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// row writes one row of cells.
func (t *table) row(cells ...string) error {
	cells = slices.Clone(cells)
	wide := false
	for i := range cells {
		cells[i] = clean(cells[i])
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
	}
	if _, err := io.WriteString(t.tw, "\n"); err != nil {
		return err
	}
	if wide {
		return t.tw.Flush()
	}
	return nil
}

func (t *table) flush() error { return t.tw.Flush() }

// jsonLines returns an encoder writing one JSON value per line. encoding/json
// replaces bytes that are not UTF-8, so every line is valid JSON whatever
// the store holds.
func jsonLines(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// orDash returns s, or "-" for an empty cell, so every column has a value
// and columns stay apart for the eye and for tools like awk.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatTime formats a wall-clock instant in UTC, to the millisecond, so
// output does not depend on the machine reading the store.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// formatAttrs formats attributes as space-separated key=value pairs, in the
// order given (key order, once read back).
func formatAttrs(attrs sessions.Attrs) string {
	var b strings.Builder
	for i, kv := range attrs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(clean(kv.Key))
		b.WriteByte('=')
		b.WriteString(formatValue(kv.Value))
	}
	return b.String()
}

// formatValue formats an attribute value for people: numbers and booleans
// as Go prints them, strings bare unless they would read ambiguously in a
// key=value list, slices in brackets.
func formatValue(v sessions.Value) string {
	switch x := v.Any().(type) {
	case string:
		return formatString(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = formatString(s)
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

// formatString cleans s, then quotes it if it is empty or holds a space,
// quote, '=' or bracket, so a key=value list reads one way only.
func formatString(s string) string {
	s = clean(s)
	if s == "" || strings.ContainsAny(s, " \"'=[]\\") || strings.ContainsFunc(s, unicode.IsSpace) {
		return strconv.Quote(s)
	}
	return s
}
