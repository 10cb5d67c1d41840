package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// timelineLine is a line of timeline --json.
type timelineLine struct {
	Session   uint64  `json:"session,string"`
	Seq       uint64  `json:"seq"`
	ParentSeq *uint64 `json:"parent_seq"`
	Depth     int     `json:"depth"`
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	OffsetNs  int64   `json:"offset_ns"`
	WallNs    int64   `json:"wall_ns"`
}

func timelineLines(t *testing.T, out string) []timelineLine {
	t.Helper()
	var lines []timelineLine
	for l := range strings.Lines(out) {
		var tl timelineLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		lines = append(lines, tl)
	}
	return lines
}

// TestTimelineConcurrentClients records four clients sending requests at
// once, each request a trace of its own with a query inside it: the
// requests are roots side by side, each query under its request, however
// their times overlap. Nesting by overlap made such a session hundreds of
// levels deep.
func TestTimelineConcurrentClients(t *testing.T) {
	const clients, requests = 4, 50
	var spans []tspan
	ms := time.Millisecond
	for r := range requests {
		for c := range clients {
			trace := uint64(r*clients + c + 1)
			// Each request starts a little after the one before it, and
			// lasts long enough to overlap the next few.
			at := time.Duration(r*clients+c) * ms
			spans = append(spans,
				tspan{kind: "request", name: "GET /item", at: at, wall: 7 * ms, trace: trace, id: 1},
				tspan{kind: "query", name: "select", at: at + ms/2, wall: 5 * ms, trace: trace, id: 2, parent: 1})
		}
	}
	dir := filepath.Join(t.TempDir(), "store")
	writeSpans(t, dir, goldenStart1, "serve", nil, spans)

	lines := timelineLines(t, mustRun(t, "timeline", "--dir", dir, "--json"))
	if len(lines) != len(spans) {
		t.Fatalf("%d lines, want one per record, %d", len(lines), len(spans))
	}
	for i, l := range lines {
		if l.Seq != uint64(i) {
			t.Fatalf("line %d has seq %d: not in stamp order", i, l.Seq)
		}
		switch l.Kind {
		case "request":
			if l.Depth != 0 || l.ParentSeq != nil {
				t.Errorf("request seq %d: depth %d, parent %v; want a root", l.Seq, l.Depth, l.ParentSeq)
			}
		case "query":
			if l.Depth != 1 || l.ParentSeq == nil || *l.ParentSeq != l.Seq-1 {
				t.Errorf("query seq %d: depth %d, parent %v; want under its request, seq %d", l.Seq, l.Depth, l.ParentSeq, l.Seq-1)
			}
		}
	}
	text := mustRun(t, "timeline", "--dir", dir)
	if strings.Contains(text, "│") {
		t.Errorf("the text timeline nests requests inside one another:\n%s", text)
	}
}

// TestTimelineDeep records a chain of spans nested 100 deep: the text
// stays within a bounded width and says how deep a record lies beyond
// the indentation it draws.
func TestTimelineDeep(t *testing.T) {
	const depth = 100
	var spans []tspan
	for i := range depth {
		spans = append(spans, tspan{kind: "call", name: "f", at: time.Duration(i) * time.Microsecond,
			wall: time.Duration(2*depth-2*i) * time.Microsecond, id: uint64(i + 1), parent: uint64(i)})
	}
	dir := filepath.Join(t.TempDir(), "store")
	writeSpans(t, dir, goldenStart1, "recurse", nil, spans)

	lines := timelineLines(t, mustRun(t, "timeline", "--dir", dir, "--json"))
	if last := lines[len(lines)-1]; last.Depth != depth-1 || *last.ParentSeq != depth-2 {
		t.Errorf("the deepest record: depth %d, parent %v; want %d under %d", last.Depth, last.ParentSeq, depth-1, depth-2)
	}
	text := mustRun(t, "timeline", "--dir", dir)
	widest := 0
	for l := range strings.Lines(text) {
		widest = max(widest, utf8.RuneCountInString(l))
	}
	if widest > 160 {
		t.Errorf("the widest line has %d characters; want the indentation capped", widest)
	}
	if !strings.Contains(text, "[depth 99] └─ f") || !strings.Contains(text, "[depth 32] └─ f") || strings.Contains(text, "[depth 31]") {
		t.Errorf("records past 32 levels do not show their depth:\n%s", text)
	}
}
