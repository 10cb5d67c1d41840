package testsupport

import (
	"bytes"
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// Entries returns every entry of s, key to value, copied (a Scan's slices
// are valid only until its next step). It fails the test on a read error.
func Entries(t testing.TB, s sessions.Store) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	for e, err := range s.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[string(e.Key)] = bytes.Clone(e.Value)
	}
	return got
}

// EntriesIn opens a store with open, returns every entry of it as
// Entries does, and closes it. It fails the test when the store does not
// open.
func EntriesIn(t testing.TB, open func() (sessions.Store, error)) map[string][]byte {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return Entries(t, s)
}
