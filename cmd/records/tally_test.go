package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// tallyStart is when the first session of writeTallyStore starts.
var tallyStart = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// writeTallyStore writes four sessions of a cache's lookups (kind cache,
// name get, key cache.key), and the tallies of the last three, by hand,
// as a recorder that lets hits go writes them, and returns the store and
// the sessions' ids:
//
//	0 (no tally: an older writer): k1 missed (filled)
//	1 missed k3: k3 missed, k1 kept (observed, effect not said); tallied k1 5 hits
//	2 only hit k3: k2 missed; tallied k3 12 hits (2µs each), k1 7 hits
//	3 never looked k3 up: k2 missed; tallied k1 3 hits
func writeTallyStore(t *testing.T) (string, []sessions.SessionID) {
	t.Helper()
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "tally")
	get := func(key string, hit bool, id uint64) tspan {
		return tspan{kind: "cache", name: "get", wall: 3 * time.Millisecond, id: id, trace: id, observed: hit,
			attrs: sessions.Attrs{str("cache.key", key)}}
	}
	runs := [][]tspan{
		{get("k1", false, 1)},
		{get("k3", false, 1), get("k1", true, 2)},
		{get("k2", false, 1)},
		{get("k2", false, 1)},
	}
	for i, spans := range runs {
		writeSpans(t, dir, tallyStart.Add(time.Duration(i)*time.Hour), "server", nil, spans)
	}
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []sessions.SessionID
	for s, err := range sessions.NewRecords(st).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 4 {
		t.Fatalf("%d sessions, want 4", len(ids))
	}
	hits := func(key string, n int, d time.Duration) sessions.TallyEntry {
		e := sessions.TallyEntry{Kind: "cache", Name: "get", Key: sessions.Attrs{str("cache.key", key)}}
		for range n {
			e.Add(d, "hit")
		}
		return e
	}
	tallies := []sessions.Tally{
		{Session: ids[1], Part: 1, Entries: []sessions.TallyEntry{hits("k1", 5, time.Microsecond)}},
		{Session: ids[2], Part: 1, Entries: []sessions.TallyEntry{hits("k1", 7, time.Microsecond), hits("k3", 12, 2*time.Microsecond)}},
		{Session: ids[3], Part: 1, Entries: []sessions.TallyEntry{hits("k1", 3, time.Microsecond)}},
	}
	var entries []sessions.Entry
	for _, tl := range tallies {
		slices.SortFunc(tl.Entries, sessions.TallyEntry.Compare)
		v, err := tl.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, sessions.Entry{Key: keys.Tally(uint64(tl.Session), tl.Part), Value: v})
	}
	if err := st.Write(entries); err != nil {
		t.Fatal(err)
	}
	return dir, ids
}

func TestTallyLook(t *testing.T) {
	dir, ids := writeTallyStore(t)
	for _, args := range [][]string{
		{"cost"}, {"cost", "--json"},
		{"diff", "--session", ids[1].String(), "--against-session", ids[2].String()},
		{"diff", "--session", ids[1].String(), "--against-session", ids[3].String()},
		{"diff", "--session", ids[1].String(), "--against-session", ids[2].String(), "--json"},
		{"why", "cache", "cache.key=k3"}, {"why", "cache", "cache.key=k3", "--json"},
		{"summary"}, {"summary", "--json"},
	} {
		t.Logf("records %s\n%s", strings.Join(args, " "), mustRun(t, append(args, "--dir", dir)...))
	}
}
