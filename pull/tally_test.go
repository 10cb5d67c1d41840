package pull_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// testTally is a part of session id's tally counting hits hits of key.
func testTally(id sessions.SessionID, part uint64, key string, hits int) tallies.Tally {
	e := tallies.Entry{Kind: "cache", Name: "lookup", Key: sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue(key)}}}
	for i := range hits {
		e.Add(time.Duration(i+1)*time.Microsecond, "hit")
	}
	return tallies.Tally{Session: id, Part: part, Entries: []tallies.Entry{e}}
}

// The parts of sessions' tallies a store holds, replayed to Jaeger, come
// back as they were, byte for byte with the rest of the store, that of
// a session whose row is gone too. Of several versions of a part the
// backend holds (a part is sent again as it counts), the pull keeps the
// one that counts most, against the store's too.
func TestPullGivesBackTallies(t *testing.T) {
	orig := buildStore(t, []string{"build-a", "build-b"}, true)
	r := sessions.NewRecords(orig)
	var ids []sessions.SessionID
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	orphan := sessions.SessionID(t0.Add(-time.Hour).UnixNano())
	parts := []tallies.Tally{testTally(ids[0], 1, "k1", 390), testTally(ids[0], 1<<63+2, "k2", 7), testTally(ids[1], 1, "k1", 2), testTally(orphan, 3, "k9", 1)}
	for _, p := range parts {
		if err := tallies.Put(r, p); err != nil {
			t.Fatal(err)
		}
	}
	// The Recorder wrote a part of each session's tally too, which
	// counts nothing here.
	all := tallyCount(t, orig)
	fake, srv := newFakeJaeger(t)
	rp, err := replay.Replay(context.Background(), r, fake, replay.Options{})
	if err != nil || rp.Tallies != all {
		t.Fatalf("replay: %+v, %v; want %d tallies sent", rp, err, all)
	}
	// An older version of the first part, received after the newer.
	older, err := spanbridge.TallySpan(spanbridge.Resource(mustRow(t, r, ids[0])), testTally(ids[0], 1, "k1", 300))
	if err != nil {
		t.Fatal(err)
	}
	fake.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{older})

	pulled := sessions.NewMemStore()
	pr := sessions.NewRecords(pulled)
	p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), pr, pull.Options{PageTraces: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, pulled, orig)
	if p.Tallies != all || p.NotRecords != 0 {
		t.Errorf("progress %+v; want %d tallies, no span taken for no record", p, all)
	}
	sum, ok, err := tallies.Read(pr, ids[0])
	if err != nil || !ok || sum.Count() != 397 {
		t.Errorf("the pulled tally of %d: %+v, %v, %v; want 397 counted", ids[0], sum, ok, err)
	}

	// A pull of the sessions a match chose takes their tallies: read
	// from their start, which is before their first record's.
	chosen := sessions.NewMemStore()
	cr := sessions.NewRecords(chosen)
	match := func(_ string, rec sessions.Record) bool {
		v, ok := rec.Attributes.Get("compile.key")
		return ok && v.String() == "build-a-k1"
	}
	if p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), cr, pull.Options{Match: match}); err != nil || p.Tallies != 3 {
		t.Errorf("pulling build-a's session: %+v, %v; want its 3 tallies (the Recorder's and 2)", p, err)
	}
	if sum, ok, err := tallies.Read(cr, ids[0]); err != nil || !ok || sum.Count() != 397 {
		t.Errorf("the tally of the session chosen: %+v, %v, %v; want 397 counted", sum, ok, err)
	}

	again, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), pr, pull.Options{})
	if err != nil || again.Tallies != 0 {
		t.Errorf("pulling again: %+v (%v); want no tally written", again, err)
	}
	// The store holds an older version than the backend: the newer is
	// written.
	if err := tallies.Put(pr, testTally(ids[0], 1, "k1", 10)); err != nil {
		t.Fatal(err)
	}
	again, err = pull.Pull(context.Background(), newJaeger(t, srv.URL), pr, pull.Options{})
	if err != nil || again.Tallies != 1 {
		t.Errorf("pulling over an older part: %+v (%v); want 1 tally written", again, err)
	}
	sameEntries(t, pulled, orig)
}

// tallyCount returns how many parts of tallies the store holds.
func tallyCount(t *testing.T, st sessions.Store) int {
	t.Helper()
	r := sessions.NewRecords(st)
	ids := []sessions.SessionID{sessions.SessionID(t0.Add(-time.Hour).UnixNano())} // the orphan's
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	n := 0
	for _, id := range ids {
		for _, err := range tallies.Parts(r, id) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

// mustRow returns session id's row.
func mustRow(t *testing.T, r *sessions.Records, id sessions.SessionID) sessions.Session {
	t.Helper()
	s, ok, err := r.Session(id)
	if err != nil || !ok {
		t.Fatal(fmt.Sprint("no row of ", id, err))
	}
	return s
}

// A replay whose records of a session are all skipped (sent before:
// records replay --cursor) sends the session's tally no more than them.
func TestReplaySkippedSessionSendsNoTally(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	r := sessions.NewRecords(orig)
	var id sessions.SessionID
	for s := range r.Sessions() {
		id = s.ID
	}
	if err := tallies.Put(r, testTally(id, 1, "k1", 3)); err != nil {
		t.Fatal(err)
	}
	fake := newFake()
	rp, err := replay.Replay(context.Background(), r, fake, replay.Options{Skip: func(sessions.Stamp) bool { return true }})
	if err != nil || rp.Tallies != 0 || rp.Spans != 0 {
		t.Errorf("replay of what was sent: %+v, %v; want nothing sent", rp, err)
	}
	if got := reflect.ValueOf(fake.spans).Len(); got != 0 {
		t.Errorf("%d traces sent", got)
	}
}
