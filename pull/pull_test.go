package pull_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123_456_789, time.UTC)

// buildStore records, through the real Recorder, a session per service
// of builds, each holding records that use every field a record has, and
// (when orphan) records of a session whose row is gone.
func buildStore(t *testing.T, services []string, orphan bool) *sessions.MemStore {
	t.Helper()
	mem := sessions.NewMemStore()
	for i, service := range services {
		start := t0.Add(time.Duration(i) * time.Hour)
		cfg := recorder.Config{Label: "build " + service, Resource: sessions.Attrs{
			{Key: "service.name", Value: sessions.StringValue(service)},
			{Key: "process.pid", Value: sessions.Int64Value(int64(4242 + i))},
			{Key: "host.name", Value: sessions.StringValue("runner-" + service)},
		}}
		testsupport.Write(t, func() (sessions.Store, error) { return testsupport.NoClose{Store: mem}, nil }, start, cfg, func(s *testsupport.Session) {
			tid := sessions.TraceID{byte(i + 1), 15: 9}
			build := sessions.SpanID{byte(i + 1), 7: 1}
			s.Put(sessions.MarksKind, sessions.Observed, s.Stamp(start), sessions.Record{
				Name: "build", Wall: 10 * time.Millisecond, TraceID: tid, SpanID: build, SpanKind: "internal",
			})
			for k := range 3 {
				key := fmt.Sprintf("%s-k%d", service, k)
				s.Put("compile", sessions.Changed, s.Stamp(start.Add(time.Duration(k+1)*time.Millisecond+7)), sessions.Record{
					Name: "compile " + key, Wall: 999_999 + time.Duration(k), TraceID: tid, SpanID: sessions.SpanID{byte(i + 1), 7: byte(k + 2)}, ParentSpanID: build,
					SpanKind: "server", TraceState: "rojo=00f067aa0ba902b7", Effect: sessions.Changed,
					Attributes: sessions.Attrs{
						{Key: "compile.key", Value: sessions.StringValue(key)},
						{Key: "bytes", Value: sessions.Int64Value(math.MinInt64 + int64(k))},
						{Key: "ratio", Value: sessions.Float64Value(math.Inf(-1))},
						{Key: "nan", Value: sessions.Float64Value(math.NaN())},
						{Key: "flags", Value: sessions.SliceValue([]bool{true, false})},
						{Key: "shape", Value: sessions.SliceValue([]int64{128, -1})},
						{Key: "weights", Value: sessions.SliceValue([]float64{0.1, 1e300})},
						{Key: "tried", Value: sessions.SliceValue([]string{"tiled", "", "simd"})},
						{Key: "no strings", Value: sessions.SliceValue[string](nil)},
						{Key: "ok", Value: sessions.BoolValue(true)},
					},
					Inputs: []string{"compile.key", "tried"},
					Status: sessions.Status{Code: spanbridge.StatusError, Description: "simd: illegal instruction"},
					Events: []sessions.Event{{Name: "miss", Offset: 3, Attributes: sessions.Attrs{{Key: "tier", Value: sessions.Int64Value(int64(2))}}}},
					Links:  []sessions.Link{{TraceID: sessions.TraceID{7}, SpanID: sessions.SpanID{8}, TraceState: "congo=t61rcWkgMzE", Attributes: sessions.Attrs{{Key: "why", Value: sessions.StringValue("batch")}}}},
					Scope:  sessions.Scope{Name: "example.com/build", Version: "v1.2.3"},

					DroppedAttributes: 1, DroppedEvents: 2, DroppedLinks: 3,
				})
			}
			// Written by a Recorder driven directly: no ids, no kind, no
			// inputs.
			s.Put("autotune", sessions.Observed, s.Stamp(start.Add(time.Second)), sessions.Record{Name: "tune", Wall: 1})
		})
	}
	if orphan {
		mem.Write([]sessions.Entry{testsupport.RecordEntry(t, "compile", sessions.Stamp{Session: sessions.SessionID(t0.Add(-time.Hour).UnixNano()), Seq: 5, Offset: 11},
			sessions.Record{Name: "orphan", TraceID: sessions.TraceID{3}, SpanID: sessions.SpanID{4}, SpanKind: "client"})})
	}
	return mem.Reopen()
}

// replayTo replays the store to the fake, as records replay sends it.
func replayTo(t *testing.T, j *fakeJaeger, mem sessions.Store) {
	t.Helper()
	if _, err := replay.Replay(context.Background(), sessions.NewRecords(mem), j, replay.Options{}); err != nil {
		t.Fatal(err)
	}
}

func newJaeger(t *testing.T, url string) *pull.Jaeger {
	t.Helper()
	j, err := pull.NewJaeger(url, nil, http.Header{"X-Api-Key": {"secret"}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// sameEntries fails the test unless the two stores hold the same keys
// with the same bytes.
func sameEntries(t *testing.T, got, want sessions.Store) {
	t.Helper()
	g, w := testsupport.Entries(t, got), testsupport.Entries(t, want)
	for k, v := range w {
		if gv, ok := g[k]; !ok {
			t.Errorf("key %q missing", k)
		} else if string(gv) != string(v) {
			t.Errorf("key %q: %x\nwant %x", k, gv, v)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("key %q is no original's", k)
		}
	}
}

// A store replayed to Jaeger comes back as it was, byte for byte: ids,
// seqs, offsets, kinds, attributes of every type, rows, a session without
// its row. Answers fuller than a page are asked for again in halves.
// Pulling again writes nothing.
func TestPullGivesBackTheReplayedStore(t *testing.T) {
	orig := buildStore(t, []string{"build-a", "build-b", "build-c"}, true)
	fake, srv := newFakeJaeger(t)
	replayTo(t, fake, orig)
	// Spans no replay sent: the program's own, another service's.
	fake.add(tracetest.SpanStubs{
		{Name: "GET /", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xee}, SpanID: trace.SpanID{1}}), StartTime: t0, EndTime: t0,
			Resource: resource.NewSchemaless(attribute.String("service.name", "build-a"))},
		{Name: "query", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xef}, SpanID: trace.SpanID{1}}), StartTime: t0, EndTime: t0,
			Resource: resource.NewSchemaless(attribute.String("service.name", "db"))},
	}.Snapshots())

	pulled := sessions.NewMemStore()
	r := sessions.NewRecords(pulled)
	p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), r, pull.Options{PageTraces: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, pulled, orig)
	records := len(testsupport.AllRecords(t, orig))
	t.Logf("pulled with 2 traces a query: %+v", p)
	if p.Records != records || p.Sessions != 4 || p.NotRecords != 2 || p.Queries < 5 || p.Present != 0 {
		t.Errorf("progress %+v; want %d records of 4 sessions, 2 spans no record, windows split, none present (the store was empty)", p, records)
	}

	again, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), r, pull.Options{})
	if err != nil || again.Records != 0 || again.Sessions != 0 || again.Present != records {
		t.Errorf("pulling again: %+v (%v); want nothing written, %d present", again, err, records)
	}
	sameEntries(t, pulled, orig)
}

// What a pull remembers of sessions is caches: one that forgets at once
// gives the same store and the same counts, reading the stores again.
func TestPullForgetsWithoutHarm(t *testing.T) {
	orig := buildStore(t, []string{"build-a", "build-b", "build-c"}, true)
	fake, srv := newFakeJaeger(t)
	replayTo(t, fake, orig)
	want := len(testsupport.AllRecords(t, orig))
	for _, n := range []int{1, 2} {
		restore := pull.SetCaches(n)
		pulled := sessions.NewMemStore()
		p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(pulled), pull.Options{PageTraces: 2})
		if err != nil || p.Records != want || p.Sessions != 4 || p.Present != 0 {
			t.Errorf("caches of %d: %+v, %v; want %d records of 4 sessions", n, p, err, want)
		}
		sameEntries(t, pulled, orig)
		again, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(pulled), pull.Options{PageTraces: 2})
		restore()
		// Present: at least every record (a trace in two windows, which
		// the traces of the sessions' tallies make more of, is counted
		// in each).
		if err != nil || again.Records != 0 || again.Sessions != 0 || again.Tallies != 0 || again.Present < want {
			t.Errorf("caches of %d, again: %+v, %v; want %d present", n, again, err, want)
		}
	}
}

// A session whose records the store holds in part (pulled while it ran)
// gets the rest; a row rewritten since (a new label) is rewritten.
func TestPullCompletesASession(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	fake, srv := newFakeJaeger(t)
	replayTo(t, fake, orig)

	partial := sessions.NewMemStore()
	all := testsupport.AllRecords(t, orig)
	rows := testsupport.SessionRows(t, orig)
	old := rows[0]
	old.Label = "an older label"
	if err := sessions.NewRecords(partial).Put([]sessions.Session{old}, all[:2]); err != nil {
		t.Fatal(err)
	}
	p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(partial), pull.Options{})
	if err != nil || p.Records != len(all)-2 || p.Present != 2 || p.Sessions != 1 {
		t.Errorf("progress %+v (%v); want the %d records missing written", p, err, len(all)-2)
	}
	sameEntries(t, partial, orig)
}

// With Match, the sessions holding a matching record are pulled whole, and
// the others not at all.
func TestPullMatchingSessions(t *testing.T) {
	orig := buildStore(t, []string{"build-a", "build-b", "build-c"}, false)
	fake, srv := newFakeJaeger(t)
	replayTo(t, fake, orig)
	match := func(_ string, rec sessions.Record) bool {
		v, ok := rec.Attributes.Get("compile.key")
		return ok && v.String() == "build-b-k1"
	}
	pulled := sessions.NewMemStore()
	p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(pulled), pull.Options{Match: match, PageTraces: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := sessions.NewMemStore()
	row := testsupport.SessionRows(t, orig)[1]
	var recs []sessions.KindRecord
	for _, kr := range testsupport.AllRecords(t, orig) {
		if kr.Stamp.Session == row.ID {
			recs = append(recs, kr)
		}
	}
	if err := sessions.NewRecords(want).Put([]sessions.Session{row}, recs); err != nil {
		t.Fatal(err)
	}
	for p, err := range tallies.Parts(sessions.NewRecords(orig), row.ID) {
		if err != nil {
			t.Fatal(err)
		}
		if err := tallies.Put(sessions.NewRecords(want), p); err != nil {
			t.Fatal(err)
		}
	}
	sameEntries(t, pulled, want)
	if p.Sessions != 1 || p.Records != len(recs) {
		t.Errorf("progress %+v; want build-b's session, %d records", p, len(recs))
	}

	none := sessions.NewMemStore()
	p, err = pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(none), pull.Options{Match: func(string, sessions.Record) bool { return false }})
	if err != nil || p.Records != 0 || none.Len() != 0 {
		t.Errorf("matching nothing: %+v (%v), %d entries; want nothing", p, err, none.Len())
	}
}

// Services and time bound what is read: a service's sessions alone, the
// records whose spans started in the range.
func TestPullByServiceAndTime(t *testing.T) {
	orig := buildStore(t, []string{"build-a", "build-b"}, false)
	fake, srv := newFakeJaeger(t)
	replayTo(t, fake, orig)

	pulled := sessions.NewMemStore()
	if _, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(pulled), pull.Options{Services: []string{"build-b"}}); err != nil {
		t.Fatal(err)
	}
	if rows := testsupport.SessionRows(t, pulled); len(rows) != 1 || rows[0].Label != "build build-b" {
		t.Errorf("rows %+v, want build-b's", rows)
	}
	// build-b started an hour after t0: its build mark at t0+1h, its
	// compiles after, in the build's trace, which is pulled whole; its
	// tune, a trace of its own, a second later.
	inTime := sessions.NewMemStore()
	if _, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(inTime), pull.Options{
		Since: t0.Add(time.Hour + time.Millisecond), Until: t0.Add(time.Hour + 500*time.Millisecond),
	}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, kr := range testsupport.AllRecords(t, inTime) {
		names = append(names, kr.Record.Name)
	}
	if strings.Join(names, ",") != "build,compile build-b-k0,compile build-b-k1,compile build-b-k2" {
		t.Errorf("records %q, want build-b's build trace", names)
	}
	if _, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(inTime), pull.Options{Services: []string{"nobody"}}); err == nil || !strings.Contains(err.Error(), `no service "nobody"`) {
		t.Errorf("an unknown service: %v", err)
	}
}

// What is not a Jaeger query service, or does not answer, is said to be
// so; a query service that wants credentials too.
func TestPullErrors(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>It works!</body></html>"))
	}))
	defer html.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "right" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		}
	}))
	defer refused.Close()
	// A port nothing listens on, taken after the servers above have
	// theirs: one taken before could be given again to one of them.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, c := range []struct {
		url  string
		want error
	}{
		{closed, pull.ErrUnreachable},
		{html.URL, pull.ErrNotJaeger},
		{notFound.URL, pull.ErrNotJaeger},
		{refused.URL, pull.ErrRefused},
	} {
		mem := sessions.NewMemStore()
		_, err := pull.Pull(context.Background(), newJaeger(t, c.url), sessions.NewRecords(mem), pull.Options{})
		if !errors.Is(err, c.want) || mem.Len() != 0 {
			t.Errorf("%s: %v; want %v, nothing written", c.url, err, c.want)
		}
	}
	// A Jaeger that knows no service answers {}; another JSON API is no
	// Jaeger.
	for body, want := range map[string]error{`{}`: nil, `{"services": []}`: nil, `{"status": "ok"}`: pull.ErrNotJaeger, `{"services": "x"}`: pull.ErrNotJaeger} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
		p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(sessions.NewMemStore()), pull.Options{})
		if !errors.Is(err, want) || err == nil && p.Queries != 0 {
			t.Errorf("services %s: %+v, %v; want %v", body, p, err, want)
		}
		srv.Close()
	}
	for _, bad := range []string{"query.invalid:10086", "ftp://host", "http://user:pw@query.invalid:10086", "http://"} { // refused before any connection
		if _, err := pull.NewJaeger(bad, nil, nil); err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("NewJaeger(%q): %v; want an error naming no password", bad, err)
		}
	}
}

var _ sdktrace.SpanExporter = (*fakeJaeger)(nil)

// costlyBackend serves the sessions of orig as replay sent them, but for
// the span of the record named name, which carries events of empty arrays
// past a reader's decoding budget: a span no writer sent, whose record no
// store takes. It is served copies times.
func costlyBackend(t *testing.T, orig sessions.Store, name string, copies int) string {
	t.Helper()
	sent := newFake()
	replayTo(t, sent, orig)
	var empties []attribute.KeyValue
	for c := byte('!'); c < 0x7f; c++ {
		empties = append(empties, attribute.StringSlice(string([]byte{c}), nil))
	}
	fake, srv := newFakeJaeger(t)
	costly := 0
	for _, id := range sent.traces {
		for _, s := range sent.spans[id] {
			if s.Name() != name {
				fake.add([]sdktrace.ReadOnlySpan{s})
				continue
			}
			stub := tracetest.SpanStubFromReadOnlySpan(s)
			for range 60 {
				stub.Events = append(stub.Events, sdktrace.Event{Name: "e", Time: stub.StartTime, Attributes: empties})
			}
			for range copies {
				fake.add([]sdktrace.ReadOnlySpan{stub.Snapshot()})
			}
			costly++
		}
	}
	if costly != 1 {
		t.Fatalf("found %d spans of %s among those replayed, want 1", costly, name)
	}
	return srv.URL
}

// A span in the backend whose record no store takes is stepped over and
// counted; the rest of its batch, its session included, is written, and
// every entry written reads back. A pull that then writes nothing of a
// session does not count it.
func TestPullStepsOverARecordNoStoreTakes(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	url := costlyBackend(t, orig, "compile build-a-k1", 2)

	// A record at a time: the second copy is read after the first was
	// refused, and is refused too, not taken for one the store holds.
	restore := pull.SetPutBatch(1)
	pulled := sessions.NewMemStore()
	p, err := pull.Pull(context.Background(), newJaeger(t, url), sessions.NewRecords(pulled), pull.Options{})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	want := len(testsupport.AllRecords(t, orig))
	if p.TooLarge != 2 || p.Present != 0 || p.Records != want-1 || p.Sessions != 1 {
		t.Errorf("progress %+v; want the 2 copies too large, none present, %d records of 1 session", p, want-1)
	}
	got := testsupport.AllRecords(t, pulled)
	if len(got) != want-1 || len(testsupport.Entries(t, pulled)) != want+tallyCount(t, orig) {
		t.Errorf("read back %d records in %d entries; want %d records, their row and their tally", len(got), len(testsupport.Entries(t, pulled)), want-1)
	}
	for _, r := range got {
		if r.Record.Name == "compile build-a-k1" {
			t.Errorf("the record past the budget was written")
		}
	}

	// Pulling again writes nothing, and counts no session. Both copies now
	// fall in one batch: the second is a record read twice (Repeated),
	// not one the store held.
	again, err := pull.Pull(context.Background(), newJaeger(t, url), sessions.NewRecords(pulled), pull.Options{})
	if err != nil || again.Sessions != 0 || again.Records != 0 || again.TooLarge != 1 || again.Present != want-1 || again.Repeated != 1 {
		t.Errorf("pulling again: %+v (%v); want nothing written, no session, 1 too large, %d present, 1 repeated", again, err, want-1)
	}
}

// A session whose row in the backend no store takes (a label past the 1
// MiB a writer writes) has its records pulled without it, and the row
// counted as too large, rather than fail the pull on it every time.
func TestPullStepsOverARowNoStoreTakes(t *testing.T) {
	orig := buildStore(t, []string{"build-a"}, false)
	sent := newFake()
	replayTo(t, sent, orig)
	fake, srv := newFakeJaeger(t)
	huge := strings.Repeat("l", 1<<20+1)
	for _, id := range sent.traces {
		for _, s := range sent.spans[id] {
			stub := tracetest.SpanStubFromReadOnlySpan(s)
			attrs := stub.Resource.Attributes()
			for i := range attrs {
				if attrs[i].Key == spanbridge.SessionLabelKey {
					attrs[i] = spanbridge.SessionLabel(huge)
				}
			}
			stub.Resource = resource.NewSchemaless(attrs...)
			fake.add([]sdktrace.ReadOnlySpan{stub.Snapshot()})
		}
	}

	pulled := sessions.NewMemStore()
	p, err := pull.Pull(context.Background(), newJaeger(t, srv.URL), sessions.NewRecords(pulled), pull.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := testsupport.AllRecords(t, orig)
	if p.TooLarge != 1 || p.Records != len(want) || p.Sessions != 1 {
		t.Errorf("progress %+v; want the row too large, %d records of 1 session", p, len(want))
	}
	if rows := testsupport.SessionRows(t, pulled); len(rows) != 0 {
		t.Errorf("a row was written: %d bytes of label", len(rows[0].Label))
	}
	// Every record, byte for byte (NaN is no DeepEqual's): the original's
	// entries but its row.
	got, had := testsupport.Entries(t, pulled), testsupport.Entries(t, orig)
	for k, v := range got {
		if !bytes.Equal(v, had[k]) {
			t.Errorf("key %q: %x, want the original's %x", k, v, had[k])
		}
	}
	if len(got) != len(had)-1 {
		t.Errorf("pulled %d entries, want the original's %d but its row", len(got), len(had))
	}
}
