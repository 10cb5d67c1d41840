package render

import (
	"cmp"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/sessions"
)

// Records writes records as records dump prints them, a line each:
// session, seq, offset, kind, name, wall, effect and attributes, aligned a
// block of FlushEvery lines at a time. An error from records ends the
// listing, after what was read before it.
func Records(w io.Writer, records iter.Seq2[sessions.KindRecord, error]) error {
	t := NewTable(w)
	n := 0
	for kr, err := range records {
		if err != nil {
			t.Flush() // show what was read before the error
			return err
		}
		cells := []string{
			kr.Stamp.Session.String(),
			strconv.FormatUint(kr.Stamp.Seq, 10),
			Duration(kr.Stamp.Offset),
			kr.Kind,
			OrDash(kr.Record.Name),
			Duration(kr.Record.Wall),
			Effect(&kr.Record),
		}
		if len(kr.Record.Attributes) > 0 {
			cells = append(cells, Attrs(kr.Record.Attributes))
		}
		if err := t.Row(cells...); err != nil {
			return err
		}
		if n++; n%FlushEvery == 0 {
			if err := t.Flush(); err != nil {
				return err
			}
		}
	}
	return t.Flush()
}

// A Filter is a --where: an attribute and the value it must have,
// compared as text as a table prints it (unquoted).
type Filter struct{ Key, Value string }

// ParseFilter reads key=value.
func ParseFilter(s string) (Filter, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return Filter{}, fmt.Errorf("%q: want key=value", s)
	}
	return Filter{k, v}, nil
}

// Matches reports whether the record has every filtered attribute with
// its value; a list matches when one of its elements does.
func Matches(rec sessions.Record, filters []Filter) bool {
	for _, f := range filters {
		v, ok := rec.Attributes.Get(f.Key)
		if !ok || !valueIs(v, f.Value) {
			return false
		}
	}
	return true
}

func valueIs(v sessions.Value, want string) bool {
	switch x := v.Any().(type) {
	case []string:
		return slices.Contains(x, want)
	case []bool, []int64, []float64:
		// Formatted as "[a b c]": match an element.
		return slices.Contains(strings.Fields(strings.Trim(Value(v), "[]")), want)
	}
	return v.String() == want
}

// Show writes the records of one kind that pass the filters as a table:
// session, seq, offset, name, wall and effect, then a column per common
// attribute key (ShowColumns), the others in a last column, OTHER. The
// columns are known only once every record shown has been read: so it
// reads them twice, once for the keys and once to print, rather than
// hold them.
func Show(w io.Writer, r *sessions.Records, kind string, filters []Filter, opts ...sessions.ReadOption) error {
	// Which attributes get a column: the most common, within bounds.
	present := map[string]int{}
	shown := 0
	for rec, err := range r.All(kind, opts...) {
		if err != nil {
			return err
		}
		if Matches(rec.Record, filters) {
			shown++
			for _, kv := range rec.Record.Attributes {
				present[kv.Key]++
			}
		}
	}
	columns, rest := ShowColumns(present, shown)

	t := NewTable(w)
	header := append([]string{"SESSION", "SEQ", "OFFSET", "NAME", "WALL", "EFFECT"}, columns...)
	if rest {
		header = append(header, "OTHER")
	}
	if err := t.Row(header...); err != nil {
		return err
	}
	n := 0
	for rec, err := range r.All(kind, opts...) {
		if err != nil {
			t.Flush()
			return err
		}
		if !Matches(rec.Record, filters) {
			continue
		}
		cells := []string{
			rec.Stamp.Session.String(),
			strconv.FormatUint(rec.Stamp.Seq, 10),
			Duration(rec.Stamp.Offset),
			OrDash(rec.Record.Name),
			Duration(rec.Record.Wall),
			Effect(&rec.Record),
		}
		for _, k := range columns {
			cell := "-"
			if v, ok := rec.Record.Attributes.Get(k); ok {
				cell = Value(v)
			}
			cells = append(cells, cell)
		}
		if rest {
			var other sessions.Attrs
			for _, kv := range rec.Record.Attributes {
				if _, ok := slices.BinarySearch(columns, kv.Key); !ok {
					other = append(other, kv)
				}
			}
			cells = append(cells, OrDash(Attrs(other)))
		}
		if err := t.Row(cells...); err != nil {
			return err
		}
		// Keep a long table's memory bounded, as dump does; columns may
		// shift a little from one block to the next.
		if n++; n%FlushEvery == 0 {
			if err := t.Flush(); err != nil {
				return err
			}
		}
	}
	return t.Flush()
}

// How Show chooses its columns: an attribute gets a column of its own when
// at least one shown record in ShowColumnShare has it, and only the
// ShowColumnsMax most common do; the others are printed as key=value in a
// last column, OTHER. A kind whose every record has keys of its own (a
// request id as the key, say) would otherwise print a column per record:
// 5,000 records, 133 MB of dashes.
const (
	ShowColumnShare = 10
	ShowColumnsMax  = 16
)

// ShowColumns returns the attribute keys that get a column, in key order,
// given how many of the shown records have each, and whether some
// attribute is left for OTHER.
func ShowColumns(present map[string]int, shown int) (columns []string, rest bool) {
	for k, n := range present {
		if n*ShowColumnShare >= shown {
			columns = append(columns, k)
		} else {
			rest = true
		}
	}
	if len(columns) > ShowColumnsMax {
		// The most common, the first in key order among equals.
		slices.SortFunc(columns, func(a, b string) int {
			return cmp.Or(cmp.Compare(present[b], present[a]), strings.Compare(a, b))
		})
		columns, rest = columns[:ShowColumnsMax], true
	}
	slices.Sort(columns)
	return columns, rest
}

// Columns lays records out in columns a line at a time, as records watch
// prints them. Lines are printed as records arrive, so no column can be as
// wide as its widest cell to come: each is as wide as the widest seen so
// far (at least its heading's width), and widens when a wider cell comes.
// The session id has a fixed width (a uint64 is at most 20 digits).
type Columns struct {
	seq, offset, kind, name, wall int
}

// columnsNameMax is the widest a name pads the name column to: a longer
// name overflows its line rather than push every later line right.
const columnsNameMax = 48

// Line returns the record's line, with its newline.
func (c *Columns) Line(kr sessions.KindRecord) string {
	session := kr.Stamp.Session.String()
	seq := strconv.FormatUint(kr.Stamp.Seq, 10)
	offset := Duration(kr.Stamp.Offset)
	kind := Clean(kr.Kind)
	name := Clean(OrDash(kr.Record.Name))
	wall := Duration(kr.Record.Wall)
	c.seq = max(c.seq, 5, len(seq))
	c.offset = max(c.offset, 8, utf8.RuneCountInString(offset))
	c.kind = max(c.kind, 8, utf8.RuneCountInString(kind))
	c.name = min(max(c.name, 16, utf8.RuneCountInString(name)), columnsNameMax)
	c.wall = max(c.wall, 8, utf8.RuneCountInString(wall))
	var b strings.Builder
	b.WriteString(pad(session, 20, false))
	b.WriteString("  " + pad(seq, c.seq, true))
	b.WriteString("  " + pad(offset, c.offset, true))
	b.WriteString("  " + pad(kind, c.kind, false))
	b.WriteString("  " + pad(name, c.name, false))
	b.WriteString("  " + pad(wall, c.wall, true))
	if len(kr.Record.Attributes) > 0 {
		b.WriteString("  " + Attrs(kr.Record.Attributes))
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}

// pad pads s with spaces to width characters, on the left when right
// (numbers and durations line up on their last digit).
func pad(s string, width int, right bool) string {
	n := width - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}
