package exporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// importRig is an Importer on a fake clock over a MemStore, whose test
// drives the loop's rounds itself (tick).
type importRig struct {
	t     *testing.T
	im    *Importer
	clock *clock.Fake
	store *sessions.MemStore
}

var epoch = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func newImportRig(t *testing.T, ic ImporterConfig, opts ...Option) *importRig {
	t.Helper()
	fake := clock.NewFake(epoch.Add(time.Hour))
	store := sessions.NewMemStore()
	im, err := NewImporter("", ic, append(opts, WithStore(store), WithClock(fake.Now))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Shutdown(context.Background()) })
	return &importRig{t: t, im: im, clock: fake, store: store}
}

func (r *importRig) send(res []attribute.KeyValue, spans ...ImportedSpan) {
	r.t.Helper()
	if err := r.im.Import(context.Background(), ImportBatch{Resource: res, Spans: spans}); err != nil {
		r.t.Fatal(err)
	}
}

// records returns the stored records of every kind in stamp order.
func (r *importRig) records() []sessions.Stamped[sessions.Record] {
	r.t.Helper()
	rd := sessions.NewRecords(r.store)
	kinds, err := rd.Kinds()
	if err != nil {
		r.t.Fatal(err)
	}
	var out []sessions.Stamped[sessions.Record]
	for _, k := range kinds {
		for s, err := range rd.All(k) {
			if err != nil {
				r.t.Fatal(err)
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b sessions.Stamped[sessions.Record]) int {
		if a.Stamp.Session != b.Stamp.Session {
			return int(a.Stamp.Session - b.Stamp.Session)
		}
		return int(a.Stamp.Seq) - int(b.Stamp.Seq)
	})
	return out
}

func (r *importRig) rows() []sessions.Session {
	r.t.Helper()
	var out []sessions.Session
	for s, err := range sessions.NewRecords(r.store).Sessions() {
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func names(recs []sessions.Stamped[sessions.Record]) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Record.Name)
	}
	return out
}

var traceA = trace.TraceID{1}

func sid(n byte) trace.SpanID { return trace.SpanID{0, 0, 0, 0, 0, 0, 0, n} }

// span is a span of traceA: id, parent (0 for a root), start in
// milliseconds after epoch, and its attributes.
func span(name string, id, parent byte, startMs int, attrs ...attribute.KeyValue) ImportedSpan {
	s := ImportedSpan{TraceID: traceA, SpanID: sid(id), Name: name,
		Start: epoch.Add(time.Duration(startMs) * time.Millisecond), End: epoch.Add(time.Duration(startMs+5) * time.Millisecond),
		Attributes: attrs}
	if parent != 0 {
		s.ParentSpanID = sid(parent)
	}
	return s
}

var node = []attribute.KeyValue{attribute.String("service.name", "builder"), attribute.Int("process.pid", 777),
	attribute.String("os.type", "linux"), attribute.String("host.arch", "arm64"), attribute.String("host.name", "ci-3")}

func changed(kind string) []attribute.KeyValue {
	return []attribute.KeyValue{spanbridge.Kind(kind), spanbridge.Changed()}
}

func TestImportChildrenBeforeTheirParentStillNest(t *testing.T) {
	r := newImportRig(t, ImporterConfig{})
	// The children end first and travel in an earlier batch; every span
	// starts in the same millisecond, as a Node.js clock gives them.
	r.send(node, span("compile a", 3, 2, 0, changed("artifact")...), span("phase", 2, 1, 0))
	r.clock.Advance(time.Second)
	r.im.tick()
	if got := r.records(); len(got) != 0 {
		t.Fatalf("recorded %v before the trace's root arrived", names(got))
	}
	r.send(node, span("build", 1, 0, 0))
	r.im.tick()
	if got := r.im.Stats().HeldSpans; got != 3 {
		t.Fatalf("%d spans held within the grace after the root, want 3", got)
	}
	r.clock.Advance(DefaultDecisionGrace)
	r.im.tick()
	got := r.records()
	if want := []string{"build", "phase", "compile a"}; !slices.Equal(names(got), want) {
		t.Fatalf("stamped %v, want parents first at an equal start: %v", names(got), want)
	}
	if got[1].Record.ParentSpanID != sessions.SpanID(sid(1)) || got[2].Record.ParentSpanID != sessions.SpanID(sid(2)) {
		t.Errorf("records do not nest by parent: %+v", got)
	}
	// The session starts at the instant its id names: the first span's
	// start with the id's random low bits cleared (docs/FORMAT.md §4.1),
	// so the three spans, started at one instant, share one offset within
	// that much of 0.
	idSlack := time.Duration(1) << recorder.IDRandomBits
	for _, rec := range got {
		if rec.Stamp.Offset != got[0].Stamp.Offset || rec.Stamp.Offset < 0 || rec.Stamp.Offset >= idSlack {
			t.Errorf("%s stamped at offset %v, want %v, under %v: their one start", rec.Record.Name, rec.Stamp.Offset, got[0].Stamp.Offset, idSlack)
		}
	}
	rows := r.rows()
	if len(rows) != 1 {
		t.Fatalf("%d sessions, want 1", len(rows))
	}
	row := rows[0]
	if row.Process != 777 || row.OS != "linux" || row.Arch != "arm64" || !hasAttr(row.Resource, "host.name", "ci-3") || !hasAttr(row.Resource, "service.name", "builder") {
		t.Errorf("session row %+v does not describe the sender", row)
	}
	if started := time.UnixMilli(row.StartedUnixMs); started.After(epoch) || epoch.Sub(started) > idSlack+time.Millisecond {
		t.Errorf("session started at %v, want its first span's start %v, less the id's random bits", started, epoch)
	}
}

func hasAttr(a sessions.Attrs, key, want string) bool {
	v, ok := a.Get(key)
	return ok && v.String() == want
}

func TestImportDecidesAfterDecisionWaitWithoutRoot(t *testing.T) {
	r := newImportRig(t, ImporterConfig{DecisionWait: 10 * time.Second})
	r.send(node, span("compile a", 3, 2, 0, changed("artifact")...))
	r.clock.Advance(9 * time.Second)
	r.im.tick()
	if len(r.records()) != 0 {
		t.Fatal("decided before decision_wait passed")
	}
	r.clock.Advance(time.Second)
	r.im.tick()
	if got := names(r.records()); !slices.Equal(got, []string{"compile a"}) {
		t.Fatalf("recorded %v after decision_wait, want the orphan", got)
	}
}

func TestImportLateSpanFollowsTheDecision(t *testing.T) {
	r := newImportRig(t, ImporterConfig{DecisionWait: time.Second})
	// The record's parent, an implicit mark, never arrives in time.
	r.send(node, span("compile a", 3, 2, 10, changed("artifact")...), span("request", 9, 0, 0))
	r.clock.Advance(time.Second)
	r.im.tick()
	// Now it does, with a sibling that encloses nothing.
	r.send(node, span("phase", 2, 1, 5), span("idle", 4, 1, 6))
	got := names(r.records())
	if want := []string{"compile a", "phase"}; !slices.Equal(got, want) {
		t.Fatalf("recorded %v, want the late mark that encloses a record and not the other: %v", got, want)
	}
	if late := r.im.Stats().Late; late != 2 {
		t.Errorf("Stats().Late = %d, want 2", late)
	}
}

func TestImportSessionsPerSender(t *testing.T) {
	r := newImportRig(t, ImporterConfig{})
	other := slices.Clone(node)
	other[1] = attribute.Int("process.pid", 778)
	withID := append(slices.Clone(node), attribute.String("service.instance.id", "b1"))
	withID2 := append(slices.Clone(other), attribute.String("service.instance.id", "b1"))
	for _, res := range [][]attribute.KeyValue{node, other, withID, withID2} {
		s := span("build", 1, 0, 0, changed("artifact")...)
		s.TraceID = trace.TraceID{byte(len(res)), byte(res[1].Value.AsInt64())}
		r.send(res, s)
	}
	r.clock.Advance(time.Second)
	r.im.tick()
	if n := len(r.rows()); n != 3 {
		t.Fatalf("%d sessions, want 3: two pids, and one service.instance.id whatever its pid", n)
	}
}

func TestImportSessionEndsAfterTimeout(t *testing.T) {
	r := newImportRig(t, ImporterConfig{SessionTimeout: time.Minute})
	r.send(node, span("build", 1, 0, 0, changed("artifact")...))
	r.clock.Advance(30 * time.Second)
	r.im.tick()
	if st := r.im.Stats(); st.Sessions != 1 || st.Written != 1 {
		t.Fatalf("after 30 s: %+v, want one session with its record written", st)
	}
	r.clock.Advance(30 * time.Second)
	r.im.tick()
	if st := r.im.Stats(); st.Sessions != 0 {
		t.Fatalf("%d sessions after the timeout, want 0", st.Sessions)
	}
	s := span("build again", 2, 0, 0, changed("artifact")...)
	s.TraceID = trace.TraceID{2}
	r.send(node, s)
	r.clock.Advance(time.Second)
	r.im.tick()
	if n := len(r.rows()); n != 2 {
		t.Fatalf("%d sessions, want 2: spans after the timeout start another", n)
	}
}

func TestImportHeldBytesBounded(t *testing.T) {
	r := newImportRig(t, ImporterConfig{HeldBytes: 64 << 10})
	big := attribute.String("blob", string(make([]byte, 4<<10)))
	for i := range 100 {
		s := span("orphan", 2, 1, i, spanbridge.Kind("artifact"), big)
		s.TraceID = trace.TraceID{byte(i), 9}
		r.send(node, s)
		if held := r.im.Stats().HeldSpanBytes; held > 64<<10 {
			t.Fatalf("holding %d bytes of spans, over the 64 KiB bound", held)
		}
	}
	if st := r.im.Stats(); st.Held == 0 {
		t.Fatalf("%+v: the traces decided early should be held as a session not kept yet", st)
	}
}

func TestImportRefusesSpansWithoutIDsAndAfterShutdown(t *testing.T) {
	r := newImportRig(t, ImporterConfig{})
	errs := captureHandled(t)
	s := span("nameless", 1, 0, 0)
	s.TraceID = trace.TraceID{}
	r.send(node, s)
	if p := r.im.Stats().Problems; p != 1 || len(errs()) != 1 {
		t.Fatalf("Problems = %d, reported %v; want 1 and one report", p, errs())
	}
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := r.im.Import(context.Background(), ImportBatch{Resource: node, Spans: []ImportedSpan{span("late", 2, 0, 0)}})
	if !errors.Is(err, sessions.ErrClosed) {
		t.Fatalf("Import after Shutdown: %v, want ErrClosed", err)
	}
}

func TestImportParentCycleDoesNotHang(t *testing.T) {
	r := newImportRig(t, ImporterConfig{})
	r.send(node, span("a", 1, 2, 0, changed("artifact")...), span("b", 2, 1, 0))
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(r.records()); got != 2 {
		t.Fatalf("%d records of a parent cycle, want both", got)
	}
}

// captureHandled collects what reaches otel.Handle during the test.
func captureHandled(t *testing.T) func() []error {
	e := &testsupport.Errors{}
	otel.SetErrorHandler(e)
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	return e.All
}

func TestImportEndsTheQuietestSessionPastMaxSessions(t *testing.T) {
	r := newImportRig(t, ImporterConfig{MaxSessions: 2})
	for i := range 3 {
		res := []attribute.KeyValue{attribute.String("service.instance.id", fmt.Sprint("sender-", i))}
		s := span("build", 1, 0, 0, changed("artifact")...)
		s.TraceID = trace.TraceID{byte(i + 1)}
		r.send(res, s)
		r.clock.Advance(time.Second)
	}
	st := r.im.Stats()
	if st.Sessions != 2 {
		t.Fatalf("%d sessions in progress, want at most 2", st.Sessions)
	}
	// The first sender's session ended to make room: its trace was
	// decided and written, not dropped.
	if rows := r.rows(); len(rows) != 1 || !hasAttr(rows[0].Resource, "service.instance.id", "sender-0") {
		t.Fatalf("sessions written: %+v, want sender-0's, ended for room", rows)
	}
}

func TestImportConcurrentSenders(t *testing.T) {
	store := sessions.NewMemStore()
	im, err := NewImporter("", ImporterConfig{}, WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			res := []attribute.KeyValue{attribute.String("service.instance.id", fmt.Sprint("g", g))}
			for i := range 50 {
				// Children first, their root in the next batch.
				tid := trace.TraceID{byte(g), byte(i), 1}
				child := span("compile", 2, 1, i, changed("artifact")...)
				child.TraceID = tid
				root := span("build", 1, 0, i)
				root.TraceID = tid
				for _, s := range []ImportedSpan{child, root} {
					if err := im.Import(context.Background(), ImportBatch{Resource: res, Spans: []ImportedSpan{s}}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rd := sessions.NewRecords(store)
	n := 0
	for _, err := range rd.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	recs := 0
	for _, kind := range []string{"artifact", "marks"} {
		for _, err := range rd.All(kind) {
			if err != nil {
				t.Fatal(err)
			}
			recs++
		}
	}
	if n != 8 || recs != 8*50*2 {
		t.Fatalf("%d sessions and %d records, want 8 and %d", n, recs, 8*50*2)
	}
}

// batchStore is a MemStore that remembers the largest batch it was given.
type batchStore struct {
	*sessions.MemStore
	largest int
}

func (s *batchStore) Write(es []sessions.Entry) error {
	n := 0
	for _, e := range es {
		n += len(e.Key) + len(e.Value)
	}
	s.largest = max(s.largest, n)
	return s.MemStore.Write(es)
}

func TestImportWritesManyDecidedTracesInBoundedBatches(t *testing.T) {
	fake := clock.NewFake(epoch.Add(time.Hour))
	store := &batchStore{MemStore: sessions.NewMemStore()}
	im, err := NewImporter("", ImporterConfig{}, WithStore(store), WithClock(fake.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer im.Shutdown(context.Background())
	var spans []ImportedSpan
	for i := range 5000 {
		s := span("compile", 1, 0, i, changed("artifact")...)
		s.TraceID = trace.TraceID{byte(i >> 8), byte(i), 7}
		s.Attributes = append(s.Attributes, attribute.String("target", strings.Repeat("x", 200)))
		spans = append(spans, s)
	}
	if err := im.Import(context.Background(), ImportBatch{Resource: node, Spans: spans}); err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Second)
	im.tick() // decides all 5,000 traces at once: over 1 MiB of records
	if st := im.Stats(); st.Written != 5000 {
		t.Fatalf("written %d, want 5000", st.Written)
	}
	if store.largest > writeAt+4<<10 {
		t.Fatalf("largest write %d bytes, want about writeAt (%d) at most", store.largest, writeAt)
	}
}
