package importer

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// importRig is an Importer on a fake clock over a store (a MemStore
// unless given), whose test drives the loop's rounds itself (tick).
type importRig struct {
	t     *testing.T
	im    *Importer
	clock *clock.Fake
	store sessions.Store
}

var epoch = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// rigNow is where a rig's clock starts: just after the spans of span()
// end, so that the senders' clocks read as the gateway's.
var rigNow = epoch.Add(time.Second)

func newImportRig(t *testing.T, ic Config, opts ...Option) *importRig {
	t.Helper()
	return newImportRigOn(t, sessions.NewMemStore(), clock.NewFake(rigNow), ic, opts...)
}

// newImportRigOn is newImportRig on a store and clock of the test's: a
// second Importer on the first's store is a restart.
func newImportRigOn(t *testing.T, store sessions.Store, fake *clock.Fake, ic Config, opts ...Option) *importRig {
	t.Helper()
	im, err := New("", ic, append(opts, WithStore(store), WithClock(fake.Now))...)
	if err != nil {
		t.Fatal(err)
	}
	im.stopLoop() // the test ticks
	t.Cleanup(func() { im.Shutdown(context.Background()) })
	return &importRig{t: t, im: im, clock: fake, store: store}
}

func (r *importRig) send(res []attribute.KeyValue, spans ...Span) Result {
	r.t.Helper()
	got, err := r.im.Import(context.Background(), Batch{Resource: res, Spans: spans})
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

// records returns the stored records of every kind in stamp order.
func (r *importRig) records() []sessions.Stamped[sessions.Record] {
	r.t.Helper()
	return storedRecords(r.t, r.store)
}

func storedRecords(t *testing.T, store sessions.Store) []sessions.Stamped[sessions.Record] {
	t.Helper()
	rd := sessions.NewRecords(store)
	kinds, err := rd.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	var out []sessions.Stamped[sessions.Record]
	for _, k := range kinds {
		for s, err := range rd.All(k) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b sessions.Stamped[sessions.Record]) int {
		if a.Stamp.Session != b.Stamp.Session {
			if a.Stamp.Session < b.Stamp.Session {
				return -1
			}
			return 1
		}
		if a.Stamp.Seq < b.Stamp.Seq {
			return -1
		}
		return 1
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
func span(name string, id, parent byte, startMs int, attrs ...attribute.KeyValue) Span {
	s := Span{TraceID: traceA, SpanID: sid(id), Name: name,
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

func hasAttr(a sessions.Attrs, key, want string) bool {
	v, ok := a.Get(key)
	return ok && v.String() == want
}

// captureHandled collects what reaches otel.Handle during the test.
func captureHandled(t *testing.T) func() []error {
	e := &testsupport.Errors{}
	otel.SetErrorHandler(e)
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	return e.All
}

// Children travel before their parent, every span starting in one
// millisecond (a Node.js clock): once the root comes they are stamped
// parents first, at once, without waiting for a grace.
func TestImportChildrenBeforeTheirParentStillNest(t *testing.T) {
	r := newImportRig(t, Config{})
	r.send(node, span("compile a", 3, 2, 0, changed("artifact")...), span("phase", 2, 1, 0))
	r.clock.Advance(time.Second)
	r.im.tick()
	if got := r.records(); len(got) != 0 {
		t.Fatalf("recorded %v before their parent arrived", names(got))
	}
	if st := r.im.Stats(); st.HeldSpans != 2 {
		t.Fatalf("%d spans waiting, want 2", st.HeldSpans)
	}
	r.send(node, span("build", 1, 0, 0))
	got := r.records()
	if want := []string{"build", "phase", "compile a"}; !slices.Equal(names(got), want) {
		t.Fatalf("stamped %v, want parents first at an equal start: %v", names(got), want)
	}
	if got[1].Record.ParentSpanID != sessions.SpanID(sid(1)) || got[2].Record.ParentSpanID != sessions.SpanID(sid(2)) {
		t.Errorf("records do not nest by parent: %+v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Stamp.Seq <= got[i-1].Stamp.Seq {
			t.Errorf("seqs %d then %d: not in order", got[i-1].Stamp.Seq, got[i].Stamp.Seq)
		}
	}
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

// A late parent: a span whose parent is placed already is placed at once;
// a parent arriving after its children wait is still stamped before them.
func TestImportParentsBeforeChildrenWithinTheWindow(t *testing.T) {
	r := newImportRig(t, Config{})
	r.send(node, span("build", 1, 0, 0, spanbridge.Kind("marks")), span("done", 9, 1, 50, changed("artifact")...))
	// Eight children of a parent that comes last, batch by batch.
	for i := range 8 {
		r.send(node, span(fmt.Sprint("step ", i), byte(20+i), 2, 10+i, spanbridge.Kind("step")))
		r.clock.Advance(100 * time.Millisecond)
		r.im.tick()
	}
	r.send(node, span("phase", 2, 1, 5, spanbridge.Kind("marks")))
	got := names(r.records())
	want := []string{"build", "done", "phase", "step 0", "step 1", "step 2", "step 3", "step 4", "step 5", "step 6", "step 7"}
	if !slices.Equal(got, want) {
		t.Fatalf("stamped %v, want the late parent before its children: %v", got, want)
	}
}

func TestImportDecidesAfterDecisionWaitWithoutRoot(t *testing.T) {
	r := newImportRig(t, Config{DecisionWait: 10 * time.Second})
	r.send(node, span("compile a", 3, 2, 0, changed("artifact")...))
	r.clock.Advance(9 * time.Second)
	r.im.tick()
	if len(r.records()) != 0 {
		t.Fatal("decided before decision_wait passed")
	}
	// The session is kept (its row is written) but its one span waits:
	// it is in the store, written ahead.
	if n := countPending(t, r.store); n != 1 {
		t.Fatalf("%d spans written ahead, want the waiting one", n)
	}
	r.clock.Advance(time.Second)
	r.im.tick()
	if got := names(r.records()); !slices.Equal(got, []string{"compile a"}) {
		t.Fatalf("recorded %v after decision_wait, want the orphan", got)
	}
	if n := countPending(t, r.store); n != 0 {
		t.Fatalf("%d spans still written ahead once recorded, want 0", n)
	}
}

// An implicit mark (a server's request span) waits DefaultDecisionGrace
// for a record inside it; one that gets none is let go, one that gets
// one is recorded before it.
func TestImportImplicitMarkWaitsItsGrace(t *testing.T) {
	r := newImportRig(t, Config{})
	r.send(node, span("kept build", 50, 0, 0, changed("artifact")...))
	req := span("GET /lookup", 1, 0, 0)
	req.Kind = trace.SpanKindServer
	r.send(node, req)
	r.clock.Advance(DefaultDecisionGrace / 2)
	r.im.tick()
	r.send(node, span("compile k3", 2, 1, 1, changed("artifact")...)) // ended after the request
	idle := span("GET /health", 3, 0, 2)
	idle.TraceID = trace.TraceID{2}
	r.send(node, idle)
	r.clock.Advance(DefaultDecisionGrace)
	r.im.tick()
	got := names(r.records())
	if want := []string{"kept build", "GET /lookup", "compile k3"}; !slices.Equal(got, want) {
		t.Fatalf("recorded %v, want the request enclosing a late record, and not the idle one: %v", got, want)
	}
}

// A record whose parent has not come in decision_wait is recorded; the
// parent, an implicit mark, is recorded when it comes, since it encloses
// a record; its sibling enclosing nothing is not.
func TestImportLateSpanFollowsTheDecision(t *testing.T) {
	r := newImportRig(t, Config{DecisionWait: time.Second})
	r.send(node, span("compile a", 3, 2, 10, changed("artifact")...), span("request", 9, 0, 0))
	r.clock.Advance(time.Second)
	r.im.tick()
	r.send(node, span("phase", 2, 1, 5), span("idle", 4, 1, 6))
	r.clock.Advance(2 * time.Second)
	r.im.tick()
	got := names(r.records())
	if want := []string{"compile a", "phase"}; !slices.Equal(got, want) {
		t.Fatalf("recorded %v, want the late mark that encloses a record and not the other: %v", got, want)
	}
}

func TestImportSessionsPerSender(t *testing.T) {
	r := newImportRig(t, Config{})
	other := slices.Clone(node)
	other[1] = attribute.Int("process.pid", 778)
	withID := append(slices.Clone(node), attribute.String("service.instance.id", "b1"))
	withID2 := append(slices.Clone(other), attribute.String("service.instance.id", "b1"))
	for i, res := range [][]attribute.KeyValue{node, other, withID, withID2} {
		s := span("build", 1, 0, 0, changed("artifact")...)
		s.TraceID = trace.TraceID{byte(i + 1)}
		r.send(res, s)
	}
	if n := len(r.rows()); n != 3 {
		t.Fatalf("%d sessions, want 3: two pids, and one service.instance.id whatever its pid", n)
	}
}

// A session ends after the session timeout; spans of its sender that
// started after that start another. The ended session is remembered for
// the dedup window (its sender entry with it), then forgotten.
func TestImportSessionEndsAfterTimeout(t *testing.T) {
	r := newImportRig(t, Config{SessionTimeout: time.Minute})
	r.send(node, span("build", 1, 0, 0, changed("artifact")...))
	r.clock.Advance(30 * time.Second)
	r.im.tick()
	if st := r.im.Stats(); st.Sessions+st.Parked != 1 || st.Written != 1 {
		t.Fatalf("after 30 s: %+v, want one session with its record written", st)
	}
	r.clock.Advance(30 * time.Second)
	r.im.tick()
	if st := r.im.Stats(); st.Sessions+st.Parked != 0 || st.Ended != 1 {
		t.Fatalf("after the timeout: %d sessions, %d ended; want 0 and 1", st.Sessions+st.Parked, st.Ended)
	}
	r.clock.Advance(2 * time.Second)
	s := span("build again", 2, 0, 61_500, changed("artifact")...)
	s.TraceID = trace.TraceID{2}
	r.send(node, s)
	if n := len(r.rows()); n != 2 {
		t.Fatalf("%d sessions, want 2: spans started after the timeout start another", n)
	}
	if n := countEntries(t, r.store); n != 2 {
		t.Fatalf("%d sender entries, want both sessions' within the dedup window", n)
	}
	r.clock.Advance(DefaultDedupWindow + time.Minute)
	r.im.tick()
	r.im.tick()
	if st := r.im.Stats(); st.Sessions+st.Parked+st.Ended != 0 {
		t.Fatalf("after the dedup window: %+v, want every session forgotten", st)
	}
	if n := countEntries(t, r.store); n != 0 {
		t.Fatalf("%d sender entries after the dedup window, want 0", n)
	}
}

func TestImportRejectsSpansWithoutIDsAndRefusesAfterShutdown(t *testing.T) {
	r := newImportRig(t, Config{})
	errs := captureHandled(t)
	s := span("nameless", 1, 0, 0)
	s.TraceID = trace.TraceID{}
	z := span("zero span", 2, 0, 0)
	z.SpanID = trace.SpanID{}
	res := r.send(node, s, z, span("fine", 3, 0, 0, changed("artifact")...))
	if res.Rejected != 2 || res.Accepted != 1 || res.Message == "" {
		t.Fatalf("result %+v, want 2 rejected with a message and 1 accepted", res)
	}
	if st := r.im.Stats(); st.Rejected != 2 || len(errs()) != 1 {
		t.Fatalf("Rejected = %d, reported %v; want 2 and one report", st.Rejected, errs())
	}
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := r.im.Import(context.Background(), Batch{Resource: node, Spans: []Span{span("late", 2, 0, 0)}})
	if !errors.Is(err, sessions.ErrClosed) {
		t.Fatalf("Import after Shutdown: %v, want ErrClosed", err)
	}
}

func TestImportParentCycleDoesNotHang(t *testing.T) {
	r := newImportRig(t, Config{DecisionWait: time.Second})
	r.send(node, span("a", 1, 2, 0, changed("artifact")...), span("b", 2, 1, 0, spanbridge.Kind("step")))
	r.clock.Advance(time.Second)
	r.im.tick()
	if got := len(r.records()); got != 2 {
		t.Fatalf("%d records of a parent cycle after decision_wait, want both", got)
	}
}

func TestImportConcurrentSenders(t *testing.T) {
	store := sessions.NewMemStore()
	im, err := New("", Config{}, WithStore(store))
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
				now := time.Now()
				child := Span{TraceID: tid, SpanID: sid(2), ParentSpanID: sid(1), Name: "compile", Start: now, End: now, Attributes: changed("artifact")}
				root := Span{TraceID: tid, SpanID: sid(1), Name: "build", Start: now, End: now}
				for _, s := range []Span{child, root} {
					if _, err := im.Import(context.Background(), Batch{Resource: res, Spans: []Span{s}}); err != nil {
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
	rows := 0
	for _, err := range sessions.NewRecords(store).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		rows++
	}
	if recs := len(storedRecords(t, store)); rows != 8 || recs != 8*50*2 {
		t.Fatalf("%d sessions and %d records, want 8 and %d", rows, recs, 8*50*2)
	}
}
