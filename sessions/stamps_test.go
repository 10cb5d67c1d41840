package sessions_test

import (
	"slices"
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// Stamps yields a stamp for each record, as many as Counts counts, from
// keys alone (noValues fails any read of a value).
func TestStampsReadsKeysOnly(t *testing.T) {
	s, want := countsStore(t)
	got := map[sessions.SessionID]int{}
	for st, err := range sessions.NewRecords(noValues{s}).Stamps() {
		if err != nil {
			t.Fatal(err)
		}
		got[st.Session]++
	}
	for id, kinds := range want {
		n := 0
		for _, c := range kinds {
			n += c
		}
		if got[id] != n {
			t.Errorf("session %d: %d stamps, want %d", id, got[id], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("stamps of %d sessions, want %d", len(got), len(want))
	}
}

// Stamps in one session reads that session's records of every kind, and
// no other's.
func TestStampsInSession(t *testing.T) {
	s := sessions.NewMemStore()
	for _, id := range []sessions.SessionID{10, 20, 30} {
		putRecord(t, s, "compile", id, 1, sessions.Record{})
		putRecord(t, s, "marks", id, 0, sessions.Record{})
	}
	var got []sessions.Stamp
	for st, err := range sessions.NewRecords(s).Stamps(sessions.InSession(20)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, st)
	}
	if want := []sessions.Stamp{{Session: 20, Seq: 1}, {Session: 20, Seq: 0}}; !slices.Equal(got, want) {
		t.Errorf("stamps %v, want %v", got, want)
	}
}
