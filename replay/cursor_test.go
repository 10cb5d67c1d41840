package replay

import (
	"path/filepath"
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// A cursor names the seqs sent of each session, so a record written
// later with a seq below others sent (a span open since the session
// began, ending now) is still to send; the file reads back what it wrote.
func TestCursorNamesEachRecordSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sent")
	c := &Cursor{upTo: 5, sent: map[sessions.SessionID]seqSet{}}
	var s seqSet
	for _, seq := range []uint64{1, 2, 3, 7, 8, 100} {
		s.add(seq)
	}
	c.sent[9] = s
	c.sent[12] = seqSet{{0, 0}}
	if err := c.WriteFile(path, func(id sessions.SessionID) bool { return id == 9 }); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCursor(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.upTo != 5 || len(got.sent) != 1 || got.sent[9].String() != "1-3,7-8,100" {
		t.Fatalf("read back upTo %d, sent %v; want 5 and session 9's 1-3,7-8,100 alone (12 is no longer in the store)", got.upTo, got.sent)
	}
	for seq, want := range map[uint64]bool{0: false, 1: true, 3: true, 4: false, 8: true, 99: false, 100: true, 101: false} {
		if got.Sent(sessions.Stamp{Session: 9, Seq: seq}) != want {
			t.Errorf("Sent(9, %d) = %v, want %v", seq, !want, want)
		}
	}
	if !got.Sent(sessions.Stamp{Session: 4, Seq: 77}) || got.Sent(sessions.Stamp{Session: 12, Seq: 0}) {
		t.Error("a session at or below upTo must count as sent, one forgotten as not")
	}
	if u := (seqSet{{0, 3}, {10, 12}}).union(seqSet{{4, 9}, {20, 20}}); u.String() != "0-12,20" {
		t.Errorf("union = %s, want 0-12,20", u)
	}
}
