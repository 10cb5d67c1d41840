package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// TestTableHoldsBoundedBytes: a table of rows with huge last cells (dump's
// attributes) writes them out as it goes, rather than hold every row until
// the end (issue 22: records dump held 1 GB for a store of 4 MiB values).
func TestTableHoldsBoundedBytes(t *testing.T) {
	var out bytes.Buffer
	tab := NewTable(&out)
	huge := strings.Repeat("a", tableHoldBytes/2)
	for i := range 8 {
		if err := tab.Row("1", "seq", huge); err != nil {
			t.Fatal(err)
		}
		if held := (i+1)*len(huge) - out.Len(); held > tableHoldBytes+len(huge) {
			t.Fatalf("after %d rows the table holds %d KiB", i+1, held>>10)
		}
	}
	if err := tab.Flush(); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 8 {
		t.Errorf("%d lines, want 8", lines)
	}
}

// TestWatchColumnsAlign: watch's text lines keep their columns aligned
// whatever the width of the values: values within a column's default
// width line up, and once a wider one has come, the lines after line up
// with it (issue 22: its columns did not align).
func TestWatchColumnsAlign(t *testing.T) {
	var c Columns
	rec := func(seq uint64, kind, name string, wall time.Duration) sessions.KindRecord {
		return sessions.KindRecord{Kind: kind, Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: 1767323045000000000, Seq: seq, Offset: time.Duration(seq) * time.Millisecond},
			Record: sessions.Record{Name: name, Wall: wall},
		}}
	}
	type rec5 struct {
		seq        uint64
		kind, name string
		wall       time.Duration
	}
	recs := []rec5{
		{1, "work", "step", time.Millisecond},
		{22, "autotune", "tune matmul", 12 * time.Second},
		{123456789, "a-rather-long-kind", "a name of some length here", 3 * time.Minute},
		{3, "work", "step", time.Millisecond},
		{4, "x", "y", time.Nanosecond},
	}
	// where holds where each line's kind and name start and where its
	// wall time (right-aligned, the last column) ends.
	var lines []string
	var where [][3]int
	for _, r := range recs {
		l := c.Line(rec(r.seq, r.kind, r.name, r.wall))
		lines = append(lines, l)
		k := strings.Index(l, "  "+r.kind+" ") + 2
		where = append(where, [3]int{k, strings.Index(l[k+len(r.kind):], r.name) + k + len(r.kind), len(l)})
	}
	for _, pair := range [][2]int{{0, 1}, {2, 3}, {2, 4}} {
		if a, b := pair[0], pair[1]; where[a] != where[b] {
			t.Errorf("columns moved (kind, name, end %v and %v):\n%s%s", where[a], where[b], lines[a], lines[b])
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                   "plain",
		"\x1b[31mred\x1b[0m":      "[31mred[0m",
		"tab\there\nnew\rline":    "tabherenewline",
		"del\x7f c1\u009b":        "del c1",
		"bad \xff byte":           "bad \ufffd byte",
		"bidi \u202eevil\u202c":   "bidi evil",
		"isolate \u2066x\u2069":   "isolate x",
		"sep\u2028ara\u2029tor":   "separator",
		"ünïcødé and 漢字 stay":     "ünïcødé and 漢字 stay",
		"literal \ufffd survives": "literal \ufffd survives",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                         "0s",
		999:                       "999ns",
		1234:                      "1.23µs",
		33_190_467:                "33.2ms",
		40 * time.Millisecond:     "40ms",
		999_600_000:               "1s",
		2500 * time.Millisecond:   "2.5s",
		83_456 * time.Millisecond: "1m23.5s",
		-33_190_467:               "-33.2ms",
		time.Hour + 2*time.Minute + 3*time.Second: "1h2m0s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%d) = %q, want %q", int64(d), got, want)
		}
	}
}

// TestShowColumns checks which attributes get a column.
func TestShowColumns(t *testing.T) {
	present := map[string]int{"a": 100, "b": 10, "c": 9, "d": 1}
	if cols, rest := ShowColumns(present, 100); strings.Join(cols, ",") != "a,b" || !rest {
		t.Errorf("columns %q, rest %v", cols, rest)
	}
	if cols, rest := ShowColumns(map[string]int{"a": 1}, 1); strings.Join(cols, ",") != "a" || rest {
		t.Errorf("columns %q, rest %v", cols, rest)
	}
	many := map[string]int{}
	for i := range 40 {
		many[fmt.Sprintf("k%02d", i)] = 100 - i
	}
	cols, rest := ShowColumns(many, 100)
	if len(cols) != ShowColumnsMax || cols[0] != "k00" || cols[len(cols)-1] != "k15" || !rest {
		t.Errorf("columns %q, rest %v", cols, rest)
	}
}
