package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	_ "github.com/otelrecords/otelrecords/internal/testkit/testsupport" // the stores it opens remember their files in a cache of the tests'
	"github.com/otelrecords/otelrecords/sessions"
)

// A run on the pretend clock records the same thing every time: the
// session starts at the given instant, and every record's offset and wall
// time are the same from run to run, whatever the machine does meanwhile.
// Another start varies the timings, as another real run would.
func TestPretendClock(t *testing.T) {
	start := time.Date(2026, 12, 2, 16, 48, 8, 0, time.UTC)
	runAt := func(clock string) (sessions.SessionID, []string) {
		dir := filepath.Join(t.TempDir(), "store")
		if err := run([]string{"-dir", dir, "-clock", clock}, new(bytes.Buffer)); err != nil {
			t.Fatal(err)
		}
		return recordsIn(t, dir)
	}
	id, first := runAt(start.Format(time.RFC3339))
	if id != sessions.SessionID(start.UnixNano()) {
		t.Errorf("session id %d, want the pretend start %d", id, start.UnixNano())
	}
	if len(first) != 22 {
		t.Fatalf("%d records, want 22: %q", len(first), first)
	}
	_, again := runAt(start.Format(time.RFC3339))
	if !slices.Equal(first, again) {
		t.Errorf("two runs from the same pretend start differ:\n%q\n%q", first, again)
	}
	_, later := runAt(start.Add(time.Hour).Format(time.RFC3339))
	if slices.Equal(first, later) {
		t.Errorf("runs from two pretend starts took the same times: %q", first)
	}
	for _, bad := range []string{"yesterday", time.Now().Add(time.Hour).Format(time.RFC3339)} {
		if err := run([]string{"-dir", filepath.Join(t.TempDir(), "store"), "-clock", bad}, new(bytes.Buffer)); err == nil {
			t.Errorf("-clock %s: no error", bad)
		}
	}
}

// recordsIn returns the newest session of the store in dir and its
// records, one line each: seq, offset, wall, kind and name.
func recordsIn(t *testing.T, dir string) (sessions.SessionID, []string) {
	t.Helper()
	r := openRecords(t, dir)
	var id sessions.SessionID
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		id = s.ID
	}
	var lines []string
	for kr, err := range r.InStampOrder(nil, sessions.InSession(id)) {
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Join([]string{fmt.Sprint(kr.Stamp.Seq), kr.Stamp.Offset.String(),
			kr.Record.Wall.String(), kr.Kind, kr.Record.Name}, " "))
	}
	return id, lines
}

// openRecords opens the store in dir read-only for the rest of the test.
func openRecords(t *testing.T, dir string) *sessions.Records {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return sessions.NewRecords(st)
}
