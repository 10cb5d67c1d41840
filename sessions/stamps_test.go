package sessions_test

import (
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
