package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// long runs the hostile-shape tests at the sizes RELIABILITY.md reports:
//
//	go test -run 'HostileShow' -v ./cmd/records/ -long
var long = flag.Bool("long", false, "run the hostile-shape tests at the sizes RELIABILITY.md reports")

// TestHostileShowDistinctKeys shows a kind whose every record has an
// attribute key of its own (a request id as the key). A column per key
// printed 133 MB for 5,000 records, nearly all of it dashes; now keys
// this rare go to the last column, OTHER, and the table grows with the
// records.
func TestHostileShowDistinctKeys(t *testing.T) {
	n := 5_000
	if *long {
		n = 50_000
	}
	var steps []step
	for i := range n {
		steps = append(steps, step{time.Duration(i) * time.Microsecond, "req", sessions.Changed, sessions.Record{
			Name: "serve",
			Attributes: sessions.Attrs{
				{Key: "method", Value: sessions.StringValue("GET")},
				{Key: fmt.Sprintf("req.%06d", i), Value: sessions.Int64Value(int64(i))},
			},
		}})
	}
	dir := filepath.Join(t.TempDir(), "store")
	recordSteps(t, dir, goldenStart1, "many keys", nil, steps)
	out := mustRun(t, "show", "req", "--dir", dir)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	t.Logf("%d records with a key each: %d bytes of table, %d lines", n, len(out), len(lines))
	if len(lines) != n+1 {
		t.Fatalf("%d lines, want %d", len(lines), n+1)
	}
	if h := strings.Fields(lines[0]); strings.Join(h, " ") != "SESSION SEQ OFFSET NAME WALL EFFECT method OTHER" {
		t.Errorf("header %q", lines[0])
	}
	if !strings.HasSuffix(lines[n], fmt.Sprintf(" GET  req.%06d=%d", n-1, n-1)) {
		t.Errorf("last line %q", lines[n])
	}
	if len(out) > 100*n {
		t.Errorf("%d bytes for %d records", len(out), n)
	}
}

// TestHostileShowWideCell shows records one of which has a 1 MB name.
// The table aligned it with the rows around it, padding a thousand names
// to 1 MB each; now a row with a cell that wide is printed on its own.
func TestHostileShowWideCell(t *testing.T) {
	const n = 2_000
	var steps []step
	for i := range n {
		name := fmt.Sprintf("step %d", i)
		if i == n/2 {
			name = strings.Repeat("w", 1<<20)
		}
		steps = append(steps, step{time.Duration(i) * time.Microsecond, "k", sessions.Changed, sessions.Record{
			Name: name, Attributes: sessions.Attrs{{Key: "i", Value: sessions.Int64Value(int64(i))}},
		}})
	}
	dir := filepath.Join(t.TempDir(), "store")
	recordSteps(t, dir, goldenStart1, "wide", nil, steps)
	for _, args := range [][]string{{"show", "k"}, {"dump"}} {
		out := mustRun(t, append(args, "--dir", dir)...)
		t.Logf("records %s: %d bytes", args[0], len(out))
		if len(out) > 1<<20+200*n {
			t.Errorf("records %s: %d bytes for %d records, one with a name of 1 MB", args[0], len(out), n)
		}
	}
}
