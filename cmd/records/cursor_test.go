package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// TestReplayCursor sends each session once: a cursor file remembers the
// last one sent, and a run after it sends only the newer ones.
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
	if code != exitOK || !strings.HasPrefix(out, "replayed 4 sessions, ") || !strings.HasSuffix(out, "names session "+ids[3]+"\n") {
		t.Fatalf("first run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := r.sentSessions(); len(got) != 4 {
		t.Errorf("sent sessions %q, want all 4", got)
	}
	if got := readBack(); got != ids[3]+"\n" {
		t.Errorf("cursor holds %q, want the newest session", got)
	}

	// Again: nothing new.
	r, addr = grpcReceiver(t)
	code, out, _ = runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor)
	if code != exitOK || !strings.HasPrefix(out, "nothing to replay: no session newer than "+ids[3]) || len(r.sentSessions()) != 0 {
		t.Errorf("second run: exit %d, stdout %q, sent %q; want nothing sent", code, out, r.sentSessions())
	}

	// From the second session on: the third and the fourth.
	if err := os.WriteFile(cursor, []byte(ids[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, addr = grpcReceiver(t)
	if code, out, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor); code != exitOK {
		t.Fatalf("third run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := r.sentSessions(); len(got) != 2 {
		t.Errorf("sent sessions %q, want the 2 after the cursor", got)
	}

	// Nothing listening: the cursor stays where it was, and says so.
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
	if code != exitError || !strings.Contains(errOut, "sending session "+ids[2]) || !strings.Contains(errOut, "run again to go on") {
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
	if code, _, errOut := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor); code != exitError || !strings.Contains(errOut, "does not name a session") {
		t.Errorf("a bad cursor: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := runRecords(t, "--dir", dir, "replay", "--endpoint", addr, "--insecure", "--cursor", cursor, "--session", ids[0]); code != exitUsage {
		t.Errorf("--cursor and --session: exit %d, want %d", code, exitUsage)
	}
}
