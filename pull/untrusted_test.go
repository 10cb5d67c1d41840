package pull_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// serveChanged serves the spans a replay of orig sends, each as change
// makes it (none, one, or several spans), and returns the URL.
func serveChanged(t *testing.T, orig sessions.Store, change func(s tracetest.SpanStub) []tracetest.SpanStub) string {
	t.Helper()
	sent := newFake()
	replayTo(t, sent, orig)
	fake, srv := newFakeJaeger(t)
	for _, id := range sent.traces {
		for _, s := range sent.spans[id] {
			for _, stub := range change(tracetest.SpanStubFromReadOnlySpan(s)) {
				fake.add([]sdktrace.ReadOnlySpan{stub.Snapshot()})
			}
		}
	}
	return srv.URL
}

// withResource returns the stub under its Resource with attrs set.
func withResource(s tracetest.SpanStub, attrs ...attribute.KeyValue) tracetest.SpanStub {
	res := s.Resource.Attributes()
	for _, kv := range attrs {
		i := slices.IndexFunc(res, func(r attribute.KeyValue) bool { return r.Key == kv.Key })
		if i < 0 {
			res = append(res, kv)
		} else {
			res[i] = kv
		}
	}
	s.Resource = resource.NewSchemaless(res...)
	return s
}

// withAttribute returns the stub with a span attribute set.
func withAttribute(s tracetest.SpanStub, kv attribute.KeyValue) tracetest.SpanStub {
	s.Attributes = slices.Clone(s.Attributes)
	i := slices.IndexFunc(s.Attributes, func(a attribute.KeyValue) bool { return a.Key == kv.Key })
	if i < 0 {
		s.Attributes = append(s.Attributes, kv)
	} else {
		s.Attributes[i] = kv
	}
	return s
}

// pullInto pulls from url into mem.
func pullInto(t *testing.T, url string, mem sessions.Store) pull.Progress {
	t.Helper()
	p, err := pull.Pull(context.Background(), newJaeger(t, url), sessions.NewRecords(mem), pull.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A backend is judged by the rules the Collector applies to its senders
// (issue 44 item 9): spans of session ids no Recorder gives (0, 2^64-1)
// and with seq -1 are refused; a row starting in year -292275055 starts
// at its id's instant; a span starting at 0 takes its end, one lasting
// 500,000 hours its start, each keeping its own times beside; all of it
// counted.
func TestPullJudgesWhatTheBackendSays(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	row := testsupport.SessionRows(t, orig)[0]
	byName := map[string]sessions.KindRecord{}
	for _, kr := range testsupport.AllRecords(t, orig) {
		byName[kr.Record.Name] = kr
	}
	url := serveChanged(t, orig, func(s tracetest.SpanStub) []tracetest.SpanStub {
		odd := withResource(s, spanbridge.SessionStartedKey.Int64(math.MinInt64))
		switch s.Name {
		case "compile build-a-k0":
			odd.StartTime = time.Unix(0, 0)
		case "compile build-a-k1":
			odd.EndTime = odd.StartTime.Add(500000 * time.Hour)
		case "compile build-a-k2":
			odd = withAttribute(odd, spanbridge.SeqKey.Int64(-1))
		}
		return []tracetest.SpanStub{odd,
			withResource(s, spanbridge.SessionIDKey.String("0")),
			withResource(s, spanbridge.SessionIDKey.String(strconv.FormatUint(math.MaxUint64, 10)))}
	})
	pulled := sessions.NewMemStore()
	p := pullInto(t, url, pulled)
	n, tallies := len(byName), tallyCount(t, orig)
	if p.Refused != 2*(n+tallies)+1 || p.Corrected != 3 || p.Records != n-1 || p.Sessions != 1 || p.Tallies != tallies {
		t.Errorf("%+v; want %d refused (two sessions of ids no Recorder gives, their tallies too, seq -1), 3 corrected, %d records and %d tallies of 1 session", p, 2*(n+tallies)+1, n-1, tallies)
	}
	if rows := testsupport.SessionRows(t, pulled); len(rows) != 1 || rows[0].StartedUnixMs != row.StartedUnixMs || rows[0].ID != row.ID {
		t.Errorf("rows %+v; want the original's, started at its id's instant (%d)", rows, row.StartedUnixMs)
	}
	text := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	for _, got := range testsupport.AllRecords(t, pulled) {
		want := byName[got.Record.Name]
		began := want.Stamp.Offset + time.Duration(row.ID)
		start, _ := got.Record.Attributes.Get(spanbridge.SpanStartKey)
		end, _ := got.Record.Attributes.Get(spanbridge.SpanEndKey)
		switch {
		case got.Stamp.Session != row.ID || got.Stamp.Seq > math.MaxInt64:
			t.Errorf("%s: stamp %+v; want session %d, a seq a record has", got.Record.Name, got.Stamp, row.ID)
		case got.Record.Name == "compile build-a-k2":
			t.Errorf("the record of seq -1 was taken")
		case got.Record.Name == "compile build-a-k0":
			if got.Stamp.Offset != want.Stamp.Offset+want.Record.Wall || got.Record.Wall != 0 ||
				start.String() != "1970-01-01T00:00:00Z" || end.String() != text(time.Unix(0, int64(began+want.Record.Wall))) {
				t.Errorf("a span at 0: offset %v wall %v, %v %v; want it at its end, its own times kept", got.Stamp.Offset, got.Record.Wall, start, end)
			}
		case got.Record.Name == "compile build-a-k1":
			if got.Stamp.Offset != want.Stamp.Offset || got.Record.Wall != 0 || end.String() != text(time.Unix(0, int64(began)).Add(500000*time.Hour)) {
				t.Errorf("a span of 500,000 hours: offset %v wall %v, end %v; want it at its start, its own end kept", got.Stamp.Offset, got.Record.Wall, end)
			}
		case got.Stamp != want.Stamp || got.Record.Wall != want.Record.Wall:
			t.Errorf("%s: %+v wall %v; want it as it was, %+v %v", got.Record.Name, got.Stamp, got.Record.Wall, want.Stamp, want.Record.Wall)
		}
	}
	// Pulled again, the corrected records are the same: present, not
	// conflicts.
	again := pullInto(t, url, pulled)
	if again.Present != n-1 || again.Conflicts != 0 || again.Records != 0 {
		t.Errorf("pulled again: %+v; want %d present", again, n-1)
	}
}

// A session id the store holds with other content is a conflict, said and
// counted, and the store keeps its own (issue 44 item 8): another
// session under the id (another Resource), whose records are all left;
// a record changed in the backend, left; a label changed in the backend,
// not taken when a record of the session conflicts.
func TestPullConflictsKeepTheStores(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	row := testsupport.SessionRows(t, orig)[0]
	n := len(testsupport.AllRecords(t, orig))
	pulled := sessions.NewMemStore()
	if p := pullInto(t, serveChanged(t, orig, func(s tracetest.SpanStub) []tracetest.SpanStub { return []tracetest.SpanStub{s} }), pulled); p.Records != n {
		t.Fatalf("first pull: %+v", p)
	}
	before := testsupport.Entries(t, pulled)
	unchanged := func(what string) {
		t.Helper()
		after := testsupport.Entries(t, pulled)
		for k, v := range before {
			if string(after[k]) != string(v) {
				t.Errorf("%s: key %q changed", what, k)
			}
		}
		if len(after) != len(before) {
			t.Errorf("%s: %d entries, want %d", what, len(after), len(before))
		}
	}

	other := serveChanged(t, orig, func(s tracetest.SpanStub) []tracetest.SpanStub {
		s = withResource(s, attribute.String("service.name", "another"), spanbridge.SessionLabelKey.String("another"))
		s.Name += " elsewhere"
		if s.Name != "tune elsewhere" {
			return []tracetest.SpanStub{s}
		}
		// And a record of it without its row, at a seq the store lacks.
		orphan := withAttribute(s, spanbridge.SeqKey.Int64(99))
		orphan.Resource = resource.NewSchemaless(attribute.String("service.name", "another"), spanbridge.SessionIDKey.String(row.ID.String()))
		return []tracetest.SpanStub{s, orphan}
	})
	p := pullInto(t, other, pulled)
	if p.Conflicts != n+1 || p.Records != 0 || p.Sessions != 0 || !slices.Equal(p.ConflictSessions, []sessions.SessionID{row.ID}) {
		t.Errorf("another session under the id: %+v; want its %d records in conflict, nothing written", p, n+1)
	}
	unchanged("another session under the id")

	changed := serveChanged(t, orig, func(s tracetest.SpanStub) []tracetest.SpanStub {
		s = withResource(s, spanbridge.SessionLabelKey.String("relabelled"))
		if s.Name == "compile build-a-k1" {
			s = withAttribute(s, attribute.Bool("ok", false))
		}
		return []tracetest.SpanStub{s}
	})
	p = pullInto(t, changed, pulled)
	if p.Conflicts != 1 || p.Present != n-1 || p.Records != 0 || p.Sessions != 0 {
		t.Errorf("a record changed: %+v; want 1 conflict, %d present, nothing written", p, n-1)
	}
	unchanged("a record changed")

	// Relabelled alone, the label is the backend's.
	relabelled := serveChanged(t, orig, func(s tracetest.SpanStub) []tracetest.SpanStub {
		return []tracetest.SpanStub{withResource(s, spanbridge.SessionLabelKey.String("relabelled"))}
	})
	p = pullInto(t, relabelled, pulled)
	if rows := testsupport.SessionRows(t, pulled); p.Conflicts != 0 || p.Sessions != 1 || len(rows) != 1 || rows[0].Label != "relabelled" {
		t.Errorf("relabelled: %+v, rows %+v; want the new label", p, rows)
	}
}

// A backend holding two sessions under one id, neither in the store,
// gives one of them, whole, and the other's are conflicts.
func TestPullTwoSessionsUnderOneID(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	n := len(testsupport.AllRecords(t, orig))
	url := serveChanged(t, orig, func(s tracetest.SpanStub) []tracetest.SpanStub {
		other := withResource(s, attribute.String("service.name", "build-a"), spanbridge.SessionProcessKey.Int(99))
		other.Name += " elsewhere"
		return []tracetest.SpanStub{s, other}
	})
	pulled := sessions.NewMemStore()
	p := pullInto(t, url, pulled)
	if p.Records != n || p.Sessions != 1 || p.Conflicts != n {
		t.Errorf("%+v; want one session's %d records, the other's in conflict", p, n)
	}
	rows := testsupport.SessionRows(t, pulled)
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	other := rows[0].Process == 99
	for _, kr := range testsupport.AllRecords(t, pulled) {
		if elsewhere := len(kr.Record.Name) > 10 && kr.Record.Name[len(kr.Record.Name)-10:] == " elsewhere"; elsewhere != other {
			t.Errorf("record %q with the row of process %d: the two sessions mixed", kr.Record.Name, rows[0].Process)
		}
	}
}

// A staging store that holds something is refused: it would be written
// into the store.
func TestPullRefusesAStagingStoreInUse(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	fake, srv := newFakeJaeger(t)
	replayTo(t, fake, orig)
	target := sessions.NewMemStore()
	_, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(target), pull.Options{Staging: orig})
	if err == nil || !strings.Contains(err.Error(), "must hold nothing") || target.Len() != 0 {
		t.Errorf("%v, %d entries written; want the staging store refused", err, target.Len())
	}
}
