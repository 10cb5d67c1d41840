package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// writeHugeRecords writes one session of n records whose one attribute is
// a value of size bytes.
func writeHugeRecords(t *testing.T, n, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "huge")
	huge := strings.Repeat("h", size)
	record(t, dir, goldenStart1, "huge", nil, func(rec *testsupport.Session) {
		for i := range n {
			st := rec.Stamp(goldenStart1.Add(time.Duration(i) * time.Millisecond))
			rec.Put("work", sessions.Changed, st, sessions.Record{Name: "step", Wall: time.Millisecond,
				Attributes: sessions.Attrs{str("payload", huge)}})
		}
	})
	return dir
}

// TestExportOTLPSplitsHugeSpans: a session of huge values is split into
// ResourceSpans of a few MiB, so the export never gathers the session in
// memory (issue 22: 5.2 GB for a 251 MB store).
func TestExportOTLPSplitsHugeSpans(t *testing.T) {
	const n, size = 12, 1 << 20
	dir := writeHugeRecords(t, n, size)
	req := decodeOTLP(t, []byte(mustRun(t, "export", "--dir", dir, "--format", "otlp-json")))
	if total := countOTLPSpans(req); total != n {
		t.Fatalf("%d spans, want %d", total, n)
	}
	if len(req.ResourceSpans) < n*size/otlpBytesPerResource {
		t.Errorf("%d ResourceSpans for %d MiB of spans, want one per %d MiB at most", len(req.ResourceSpans), n*size>>20, otlpBytesPerResource>>20)
	}
	for i, rs := range req.ResourceSpans {
		if got := proto.Size(rs); got > otlpBytesPerResource+size+64<<10 {
			t.Errorf("ResourceSpans %d is %d bytes, want at most %d and one span", i, got, otlpBytesPerResource)
		}
	}
}

// TestReportCutsHugeValues: a report holds and shows a huge value cut,
// with a marker, and says it cut it (issue 22: a 559 MB page took 1.45 GB
// to write).
func TestReportCutsHugeValues(t *testing.T) {
	const n, size = 3, 1 << 20
	dir := writeHugeRecords(t, n, size)
	page := mustRun(t, "report", "--dir", dir)
	if len(page) > 200<<10 {
		t.Errorf("a report of %d values of %d MiB is %d KiB", n, size>>20, len(page)>>10)
	}
	if want := fmt.Sprintf("… [%d bytes cut]", size-reportValueMax); !strings.Contains(page, want) {
		t.Errorf("no marker %q in the report", want)
	}
	// Each value is cut twice: in its kind's table and in its bar's details.
	if want := fmt.Sprintf("%d values too long to show are cut", 2*n); !strings.Contains(page, want) {
		t.Errorf("the report does not say %q", want)
	}
}

func TestCutText(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 4, "abcd… [8 bytes cut]"},
		{"ééé", 3, "é… [4 bytes cut]"}, // not in the middle of a character
	} {
		got, cut := cutText(c.in, c.n)
		if got != c.want || cut != (got != c.in) {
			t.Errorf("cutText(%q, %d) = %q, %v; want %q", c.in, c.n, got, cut, c.want)
		}
	}
}

// TestTableHoldsBoundedBytes: a table of rows with huge last cells (dump's
// attributes) writes them out as it goes, rather than hold every row until
// the end (issue 22: records dump held 1 GB for a store of 4 MiB values).
func TestTableHoldsBoundedBytes(t *testing.T) {
	var out bytes.Buffer
	tab := newTable(&out)
	huge := strings.Repeat("a", tableHoldBytes/2)
	for i := range 8 {
		if err := tab.row("1", "seq", huge); err != nil {
			t.Fatal(err)
		}
		if held := (i+1)*len(huge) - out.Len(); held > tableHoldBytes+len(huge) {
			t.Fatalf("after %d rows the table holds %d KiB", i+1, held>>10)
		}
	}
	if err := tab.flush(); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 8 {
		t.Errorf("%d lines, want 8", lines)
	}
}

// TestCompactRecordKeepsOnlyItself: a tree of compacted records holds
// their names, not the values they were read from (a decoded record's
// strings are pieces of one copy of its value), and a huge name is cut.
func TestCompactRecordKeepsOnlyItself(t *testing.T) {
	value := strings.Repeat("v", 1<<20) + "step"
	rec := sessions.Record{
		Name:       value[len(value)-4:],
		Attributes: sessions.Attrs{str("payload", value[:1<<20])},
		Status:     sessions.Status{Code: "error", Description: value[:10]},
		Inputs:     []string{},
	}
	got := compactRecord(rec)
	if got.Name != "step" || unsafe.StringData(got.Name) == unsafe.StringData(rec.Name) {
		t.Errorf("name %q shares the value it was read from", got.Name)
	}
	if unsafe.StringData(got.Status.Description) == unsafe.StringData(value) {
		t.Error("status description shares the value it was read from")
	}
	if got.Attributes != nil || got.Inputs == nil {
		t.Errorf("attributes %v, inputs %v: want none, and an empty list kept", got.Attributes, got.Inputs)
	}
	long := compactRecord(sessions.Record{Name: strings.Repeat("n", 2*heldNameMax)}).Name
	if len(long) > heldNameMax+64 || !strings.HasSuffix(long, fmt.Sprintf("[%d bytes cut]", heldNameMax)) {
		t.Errorf("a name of %d bytes held as %d bytes", 2*heldNameMax, len(long))
	}
}

// TestWatchColumnsAlign: watch's text lines keep their columns aligned
// whatever the width of the values: values within a column's default
// width line up, and once a wider one has come, the lines after line up
// with it (issue 22: its columns did not align).
func TestWatchColumnsAlign(t *testing.T) {
	var c watchColumns
	rec := func(seq uint64, kind, name string, wall time.Duration) kindRecord {
		return kindRecord{Kind: kind, Stamped: sessions.Stamped[sessions.Record]{
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
		l := c.line(rec(r.seq, r.kind, r.name, r.wall))
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

// TestWatchMissingDir: a --dir that does not exist is an error, at once,
// not a wait for ever (issue 22).
func TestWatchMissingDir(t *testing.T) {
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		done <- run([]string{"watch", "--dir", filepath.Join(t.TempDir(), "nope")}, io.Discard, &stderr)
	}()
	select {
	case code := <-done:
		if code != exitUsage || !strings.Contains(stderr.String(), "no such directory") {
			t.Errorf("exit %d, stderr %q; want %d and no such directory", code, stderr.String(), exitUsage)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch --dir nope still waiting after 10s")
	}
}
