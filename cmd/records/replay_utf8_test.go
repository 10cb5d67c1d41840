package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// TestReplayRepairsInvalidUTF8: a store whose records hold bytes that are
// not UTF-8 replays whole, each run of invalid bytes sent as U+FFFD, and
// the command says which records it repaired. Before, protobuf refused
// the batch holding the first such record, after part of the store was
// sent, and the command blamed the receiver.
func TestReplayRepairsInvalidUTF8(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	steps := []step{{0, "compile", sessions.Changed, sessions.Record{Name: "fine", Wall: time.Millisecond}}}
	for i := range 1100 { // past the first batch of 512
		steps = append(steps, step{time.Duration(i) * time.Microsecond, "compile", sessions.Observed, sessions.Record{Name: fmt.Sprint("fine ", i)}})
	}
	for i := range 7 {
		steps = append(steps, step{time.Millisecond, "compile", sessions.Observed, sessions.Record{
			Name: fmt.Sprint("bad ", i), Attributes: sessions.Attrs{str("key", "value \xff")},
		}})
	}
	recordSteps(t, dir, goldenStart1, "label \xfe", nil, steps)
	r, addr := grpcReceiver(t)
	code, out, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--timeout", "10s")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "replayed 1 session, 1108 spans"; !strings.HasPrefix(out, want) {
		t.Errorf("stdout %q, want %q", out, want)
	}
	want := fmt.Sprintf("records: 7 records (session %[1]d seq 1101, session %[1]d seq 1102, session %[1]d seq 1103, session %[1]d seq 1104, session %[1]d seq 1105, ...) and 1 session row held strings that are not UTF-8, which OTLP cannot carry: sent with U+FFFD in place of each run of invalid bytes\n", goldenID1)
	if errOut != want {
		t.Errorf("stderr %q\nwant %q", errOut, want)
	}
	if spans, _ := r.names(); len(spans) != 1109 { // and the session's tally
		t.Errorf("the receiver got %d spans, want 1109", len(spans))
	}
}
