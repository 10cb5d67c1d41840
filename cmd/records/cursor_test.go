package main

import (
	"fmt"
	"slices"
	"time"

	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// sentSessions returns the records.session.id of every resource the
// receiver got, in the order received, each once.
func (r *receiver) sentSessions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, rs := range r.spans {
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "records.session.id" {
				id := kv.Value.GetStringValue()
				if id == "" {
					id = strings.TrimSpace(kv.Value.String())
				}
				if len(ids) == 0 || ids[len(ids)-1] != id {
					ids = append(ids, id)
				}
			}
		}
	}
	return ids
}

// TestReplayCursor sends each record once: a cursor file remembers what
// the backend accepted, and a run after it sends only the rest.
func TestReplayCursor(t *testing.T) {
	dir := writeAnswersStore(t)
	cursor := filepath.Join(t.TempDir(), "sent")
	ids := make([]string, len(answersIDs))
	for i, id := range answersIDs {
		ids[i] = id.String()
	}
	readBack := func() string {
		t.Helper()
		b, err := os.ReadFile(cursor)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// No cursor yet: every session, oldest first.
	r, addr := grpcReceiver(t)
	code, out, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor)
	if code != exitOK || !strings.HasPrefix(out, "replayed 25 records of 4 sessions to ") || !strings.Contains(out, "sent 25, the backend accepted 25, 0 remain") {
		t.Fatalf("first run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := r.sentSessions(); !slices.Equal(got, ids) {
		t.Errorf("sent sessions %q, want all 4 in order", got)
	}
	if got := readBack(); !strings.Contains(got, ids[3]+" 0-") || strings.Count(got, "\n") != 5 {
		t.Errorf("cursor holds %q, want a line for each session", got)
	}

	// Again: nothing new.
	r, addr = grpcReceiver(t)
	code, out, _ = runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor)
	if code != exitOK || !strings.HasPrefix(out, "nothing to replay: ") || len(r.sentSessions()) != 0 {
		t.Errorf("second run: exit %d, stdout %q, sent %q; want nothing sent", code, out, r.sentSessions())
	}

	// A cursor of an older records names the newest session sent: the
	// sessions after it go.
	if err := os.WriteFile(cursor, []byte(ids[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, addr = grpcReceiver(t)
	if code, out, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor); code != exitOK {
		t.Fatalf("third run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := r.sentSessions(); !slices.Equal(got, ids[2:]) {
		t.Errorf("sent sessions %q, want the 2 after the cursor", got)
	}

	// Nothing listening: the cursor stays where it was, and says how
	// much remains.
	if err := os.WriteFile(cursor, []byte(ids[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	code, _, errOut = runRecords(t, "--dir", dir, "replay", "--endpoint", closed, "--insecure", "--timeout", "1s", "--cursor", cursor)
	if code != exitError || !strings.Contains(errOut, "sending session "+ids[2]) || !strings.Contains(errOut, "the backend accepted 0, 13 remain") {
		t.Errorf("nothing listening: exit %d, stderr %q", code, errOut)
	}
	if got := readBack(); got != ids[1] {
		t.Errorf("after a failed run the cursor holds %q, want %q as before", got, ids[1])
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(cursor), ".sent.*")); len(leftovers) != 0 {
		t.Errorf("temporary cursor files left behind: %q", leftovers)
	}

	// A cursor that names no session, and a cursor beside --session.
	if err := os.WriteFile(cursor, []byte("yesterday"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor); code != exitError || !strings.Contains(errOut, "does not name what was sent") {
		t.Errorf("a bad cursor: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor, "--session", ids[0]); code != exitUsage {
		t.Errorf("--cursor and --session: exit %d, want %d", code, exitUsage)
	}
}

// A long session that started first and is kept after a later-started
// short one was sent is sent by the next run, all 101 of its records:
// before, the cursor named the newest session sent, and skipped it.
func TestReplayCursorSendsASessionKeptLate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	cursor := filepath.Join(t.TempDir(), "sent")
	long, short := answersStart, answersStart.Add(time.Minute)
	writeSpans(t, dir, short, "short", nil, []tspan{{kind: "compile", name: "short", id: 1}})
	run := func() (*receiver, string) {
		t.Helper()
		r, addr := grpcReceiver(t)
		code, out, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor)
		if code != exitOK {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		return r, out
	}
	if r, _ := run(); len(spanNames(r)) != 1 {
		t.Fatalf("first run sent %q, want the short session's one span", spanNames(r))
	}
	spans := make([]tspan, 101)
	for i := range spans {
		spans[i] = tspan{kind: "compile", name: fmt.Sprint("long ", i), at: time.Duration(i) * time.Millisecond, id: uint64(i + 1)}
	}
	writeSpans(t, dir, long, "long", nil, spans)
	r, out := run()
	if n := len(spanNames(r)); n != 101 || !strings.Contains(out, "sent 101, the backend accepted 101, 0 remain") {
		t.Fatalf("second run sent %d spans, said %q; want the long session's 101", n, out)
	}
	if r, out := run(); len(spanNames(r)) != 0 || !strings.HasPrefix(out, "nothing to replay") {
		t.Fatalf("third run sent %d spans, said %q; want nothing", len(spanNames(r)), out)
	}
}

// spanNames returns the names of the records' spans the receiver got
// (not the sessions' tallies').
func spanNames(r *receiver) []string {
	names, _ := r.names()
	return slices.DeleteFunc(names, func(n string) bool { return n == spanbridge.TallyName })
}
