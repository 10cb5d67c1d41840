package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/otelrecords/otelrecords/cmd/records/internal/report"
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
	if want := fmt.Sprintf("… [%d bytes cut]", size-report.ValueMax); !strings.Contains(page, want) {
		t.Errorf("no marker %q in the report", want)
	}
	// Each value is cut twice: in its kind's table and in its bar's details.
	if want := fmt.Sprintf("%d values too long to show are cut", 2*n); !strings.Contains(page, want) {
		t.Errorf("the report does not say %q", want)
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
