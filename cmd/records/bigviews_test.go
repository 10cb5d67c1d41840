package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

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
