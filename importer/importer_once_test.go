package importer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// countPending counts the spans written ahead (pending entries that are
// not emptied) in store.
func countPending(t *testing.T, store sessions.Store) int {
	return countUnder(t, store, keys.ImportPending)
}

// countEntries counts the sender entries in store.
func countEntries(t *testing.T, store sessions.Store) int {
	return countUnder(t, store, keys.ImportSenders)
}

// countUnder counts the entries with a value in namespace ns.
func countUnder(t *testing.T, store sessions.Store, ns string) int {
	t.Helper()
	n := 0
	for e, err := range store.Scan(keys.NamespaceStart(ns), keys.NamespaceEnd(ns)) {
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Value) > 0 {
			n++
		}
	}
	return n
}

// failingStore is a MemStore whose writes fail while fail is set, as a
// full disk's do.
type failingStore struct {
	*sessions.MemStore
	mu   sync.Mutex
	fail bool
}

var errDiskFull = errors.New("no space left on device (a test's)")

func (s *failingStore) Write(es []sessions.Entry) error {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return errDiskFull
	}
	return s.MemStore.Write(es)
}

func (s *failingStore) set(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

// spansOf makes n changed spans of their own traces, the i-th with the
// trace id {tag, i}.
func spansOf(tag byte, n int) []Span {
	out := make([]Span, n)
	for i := range out {
		out[i] = span(fmt.Sprint("compile ", tag, " ", i), 1, 0, i, changed("artifact")...)
		out[i].TraceID = trace.TraceID{tag, byte(i >> 8), byte(i)}
	}
	return out
}

// countBySpan counts the stored records of each (trace, span) pair, and
// fails the test for any stored more than once.
func storedOnce(t *testing.T, store sessions.Store) map[spanRef]int {
	t.Helper()
	got := map[spanRef]int{}
	for _, r := range storedRecords(t, store) {
		k := spanRef{Trace: trace.TraceID(r.Record.TraceID), Span: trace.SpanID(r.Record.SpanID)}
		got[k]++
		if got[k] > 1 {
			t.Errorf("%s (trace %x) stored %d times", r.Record.Name, k.Trace, got[k])
		}
	}
	return got
}

// A store that refuses writes (a full disk) for a while, under a sender
// that retries whatever it was not told is stored: the first batch's
// error leaves its spans to be written once the disk is back; the retries
// meanwhile are refused whole (ErrRefused), nothing of them kept; the
// retry after takes nothing twice. A sender not kept yet is still taken:
// it needs no write.
func TestImportRetriesThroughAFailingStoreStoreOnce(t *testing.T) {
	store := &failingStore{MemStore: sessions.NewMemStore()}
	r := newImportRigOn(t, store, clock.NewFake(rigNow), Config{})
	first := spansOf(1, 20)
	r.send(node, first[:10]...) // the session is kept, and written
	store.set(true)
	if _, err := r.im.Import(context.Background(), Batch{Resource: node, Spans: first[10:]}); !errors.Is(err, errDiskFull) {
		t.Fatalf("Import on a full disk: %v, want its error", err)
	}
	for range 3 {
		_, err := r.im.Import(context.Background(), Batch{Resource: node, Spans: first[10:]})
		if !errors.Is(err, ErrRefused) || !errors.Is(err, errDiskFull) {
			t.Fatalf("retry on a full disk: %v, want ErrRefused and the store's error", err)
		}
	}
	warm := []attribute.KeyValue{attribute.String("service.instance.id", "warm")}
	if _, err := r.im.Import(context.Background(), Batch{Resource: warm, Spans: []Span{span("lookup", 1, 0, 0, spanbridge.Kind("lookup"))}}); err != nil {
		t.Fatalf("a sender that needs no write, on a full disk: %v", err)
	}
	if st := r.im.Stats(); st.Refused != 30 {
		t.Errorf("Refused = %d, want 30", st.Refused)
	}
	store.set(false)
	res := r.send(node, first[10:]...)
	if res.Duplicates != 10 {
		t.Errorf("retry after the disk came back: %+v, want its 10 spans recognised", res)
	}
	got := storedOnce(t, store)
	if len(got) != 20 {
		t.Fatalf("%d spans stored, want 20", len(got))
	}
}

// A span repeated within a batch, or sent again later (a retry of a batch
// whose answer was lost), is stored once, the first kept.
func TestImportDuplicatesAreStoredOnce(t *testing.T) {
	r := newImportRig(t, Config{})
	a := span("compile a", 1, 0, 0, changed("artifact")...)
	a2 := a
	a2.Name = "compile a again"
	res := r.send(node, a, a2, a)
	if res.Accepted != 3 || res.Duplicates != 2 {
		t.Fatalf("result %+v, want 3 accepted, 2 of them duplicates", res)
	}
	r.clock.Advance(50 * time.Second) // parked meanwhile
	r.im.tick()
	if res := r.send(node, a); res.Duplicates != 1 {
		t.Fatalf("a span sent again 50 s later: %+v, want it recognised", res)
	}
	if got := names(r.records()); !slices.Equal(got, []string{"compile a"}) {
		t.Fatalf("stored %v, want the first only", got)
	}
	if st := r.im.Stats(); st.Duplicates != 3 || st.Accepted != 4 {
		t.Errorf("Stats: %d accepted, %d duplicates; want 4 and 3", st.Accepted, st.Duplicates)
	}
}

// A crash (the Importer abandoned, never shut down) and a new Importer on
// the same store: the sender's session continues under its id; what the
// sender (or a Collector's queue) sends again is taken once; a span that
// waited for its parent, written ahead, is recorded when the parent comes.
func TestImportAfterACrashTakesEachSpanOnce(t *testing.T) {
	store := sessions.NewMemStore()
	fake := clock.NewFake(rigNow)
	r1 := newImportRigOn(t, store, fake, Config{})
	batch := spansOf(7, 50)
	r1.send(node, batch...)
	orphan := span("link", 9, 8, 60, changed("artifact")...) // its parent comes after the crash
	orphan.TraceID = trace.TraceID{9}
	r1.send(node, orphan)
	if n := countPending(t, store); n != 1 {
		t.Fatalf("%d spans written ahead before the crash, want 1", n)
	}
	before := r1.rows()
	// The crash: r1 is left as it is.
	fake.Advance(3 * time.Second)
	r2 := newImportRigOn(t, store, fake, Config{})
	res := r2.send(node, batch...)
	if res.Duplicates != 50 {
		t.Fatalf("the batch sent again after the restart: %+v, want all 50 recognised", res)
	}
	parent := span("package", 8, 0, 59)
	parent.TraceID = trace.TraceID{9}
	r2.send(node, parent, span("test", 3, 0, 70, changed("artifact")...))
	got := storedOnce(t, store)
	if len(got) != 53 {
		t.Fatalf("%d spans stored, want 53", len(got))
	}
	rows := r2.rows()
	if len(rows) != 1 || len(before) != 1 || rows[0].ID != before[0].ID {
		t.Fatalf("sessions %v after the restart, want the one from before (%v)", rows, before)
	}
	recs := r2.records()
	seqs := map[uint64]bool{}
	var pkg, link uint64
	for _, rec := range recs {
		if seqs[rec.Stamp.Seq] {
			t.Errorf("seq %d stamped twice", rec.Stamp.Seq)
		}
		seqs[rec.Stamp.Seq] = true
		switch rec.Record.Name {
		case "package":
			pkg = rec.Stamp.Seq
		case "link":
			link = rec.Stamp.Seq
		}
	}
	if link <= pkg {
		t.Errorf("the span written ahead stamped at %d, its parent at %d: want the parent first", link, pkg)
	}
	if st := r2.im.Stats(); st.Recovered != 1 {
		t.Errorf("Recovered = %d, want 1", st.Recovered)
	}
}

// A kept session quiet for parkAfter is let go, and continues under its
// id when its sender comes back: one session, seqs going on.
func TestImportQuietSessionContinuesUnderItsID(t *testing.T) {
	r := newImportRig(t, Config{})
	r.send(node, spansOf(1, 3)...)
	r.clock.Advance(parkAfter + time.Second)
	r.im.tick()
	if st := r.im.Stats(); st.Sessions != 0 || st.Parked != 1 {
		t.Fatalf("after %v quiet: %d sessions in memory, %d parked; want 0 and 1", parkAfter, st.Sessions, st.Parked)
	}
	r.send(node, spansOf(2, 3)...)
	if st := r.im.Stats(); st.Resumed != 1 {
		t.Errorf("Resumed = %d, want 1", st.Resumed)
	}
	recs := r.records()
	if rows := r.rows(); len(rows) != 1 || len(recs) != 6 {
		t.Fatalf("%d sessions, %d records; want 1 and 6", len(rows), len(recs))
	}
	for i, rec := range recs {
		if rec.Stamp.Seq != uint64(i) {
			t.Errorf("record %d at seq %d: want seqs going on", i, rec.Stamp.Seq)
		}
	}
}

// A batch delivered again after its session ended — a retry, a queue's
// replay after an outage — within the dedup window: 70 s and 130 s after
// it was taken (the session timeout is a minute), in the same Importer
// and in one started again after a crash, it is recognised, and no
// session is started for it. A span of the ended session that was never
// taken (it started before the session ended) joins that session again.
func TestImportReplayAfterTheSessionEndedTakenOnce(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprint("restart=", restart), func(t *testing.T) {
			store := sessions.NewMemStore()
			fake := clock.NewFake(rigNow)
			r := newImportRigOn(t, store, fake, Config{SessionTimeout: time.Minute})
			batch := spansOf(3, 200)
			r.send(node, batch...)
			before := r.rows()
			for _, after := range []time.Duration{70 * time.Second, 130 * time.Second} {
				for fake.Now().Before(rigNow.Add(after)) {
					fake.Advance(time.Second)
					r.im.tick()
				}
				if restart {
					r = newImportRigOn(t, store, fake, Config{SessionTimeout: time.Minute})
				}
				if res := r.send(node, batch...); res.Duplicates != len(batch) {
					t.Fatalf("the batch sent again %v later: %+v, want all %d recognised", after, res, len(batch))
				}
				if st := r.im.Stats(); st.Sessions != 0 {
					t.Fatalf("the batch sent again %v later brought %d sessions into memory, want none", after, st.Sessions)
				}
			}
			late := spansOf(4, 1)[0] // started with the batch, never taken
			r.send(node, late)
			if got := storedOnce(t, store); len(got) != len(batch)+1 {
				t.Fatalf("%d spans stored, want %d", len(got), len(batch)+1)
			}
			rows := r.rows()
			if len(rows) != 1 || rows[0].ID != before[0].ID {
				t.Fatalf("sessions %v, want the one from before (%v)", rows, before)
			}
			recs := r.records()
			if last := recs[len(recs)-1]; last.Record.Name != late.Name || last.Stamp.Seq != uint64(len(batch)) {
				t.Fatalf("the late span stored as %q at seq %d, want %q at %d", last.Record.Name, last.Stamp.Seq, late.Name, len(batch))
			}
		})
	}
}

// The dedup window is its own setting: past it a span delivered again is
// taken again (in the sender's new session), and within it, however
// short the session timeout, it is not.
func TestImportDedupWindowIsItsOwn(t *testing.T) {
	r := newImportRig(t, Config{SessionTimeout: 2 * time.Second, DedupWindow: 20 * time.Second})
	batch := spansOf(5, 10)
	r.send(node, batch...)
	r.clock.Advance(15 * time.Second)
	r.im.tick()
	if res := r.send(node, batch...); res.Duplicates != len(batch) {
		t.Fatalf("sent again within the window: %+v, want all recognised", res)
	}
	for range 3 {
		r.clock.Advance(sweepEvery)
		r.im.tick()
	}
	if st := r.im.Stats(); st.SeenSpans != 0 || st.Ended != 0 {
		t.Fatalf("past the window %d spans and %d sessions remembered, want none", st.SeenSpans, st.Ended)
	}
	if res := r.send(node, batch...); res.Duplicates != 0 {
		t.Fatalf("sent again past the window: %+v, want it taken", res)
	}
}

// Spans written ahead together share an entry, emptied once all of them
// are recorded: after a crash with some recorded and some still waiting,
// the restart places again only those still waiting, each stored once.
func TestImportWrittenAheadTogetherRecordedOnce(t *testing.T) {
	store := sessions.NewMemStore()
	fake := clock.NewFake(rigNow)
	r1 := newImportRigOn(t, store, fake, Config{})
	var kids []Span
	for i := range 3 {
		k := span(fmt.Sprint("compile ", i), 20, 10, 10+i, changed("artifact")...)
		k.TraceID = trace.TraceID{30, byte(i)}
		kids = append(kids, k)
	}
	r1.send(node, kids...)
	if n := countPending(t, store); n != 1 {
		t.Fatalf("3 spans written ahead in %d entries, want 1", n)
	}
	parent := func(i int) Span {
		p := span(fmt.Sprint("phase ", i), 10, 0, i)
		p.TraceID = trace.TraceID{30, byte(i)}
		return p
	}
	r1.send(node, parent(0))
	if n := countPending(t, store); n != 1 {
		t.Fatalf("%d entries written ahead with one of their 3 spans recorded, want the one", n)
	}
	// The crash: r1 is left as it is.
	fake.Advance(3 * time.Second)
	r2 := newImportRigOn(t, store, fake, Config{})
	r2.send(node, parent(1), parent(2))
	got := storedOnce(t, store)
	if len(got) != 6 {
		t.Fatalf("%d spans stored, want 6", len(got))
	}
	if n := countPending(t, store); n != 0 {
		t.Fatalf("%d entries written ahead once every span is recorded, want 0", n)
	}
}

// A value written ahead that compresses well is stored compressed (Badger
// sizes the tables it builds by their compressed size, and holds them
// uncompressed while it builds them), and reads back as it was.
func TestImportWrittenAheadCompressed(t *testing.T) {
	blob := attribute.String("blob", strings.Repeat("x", 4096))
	kid := span("compile", 20, 10, 10, append(changed("artifact"), blob)...)
	r := newImportRig(t, Config{})
	r.send(node, kid)
	for e, err := range r.store.Scan(keys.NamespaceStart(keys.ImportPending), keys.NamespaceEnd(keys.ImportPending)) {
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Value) > 1024 {
			t.Fatalf("a span with a 4 KiB attribute of one letter written ahead in %d bytes", len(e.Value))
		}
		spans, _, err := decodePending(e.Value)
		if err != nil || len(spans) != 1 {
			t.Fatalf("decoded %d spans, %v", len(spans), err)
		}
		set := attribute.NewSet(spans[0].span.Attributes...)
		if v, _ := set.Value("blob"); set.Len() != 3 || v.AsString() != blob.Value.AsString() {
			t.Fatal("the attribute read back is not the one written")
		}
	}
}

// A graceful restart while children wait for their parent: Shutdown
// leaves them written ahead, not stamped, and the parent coming 8 s after
// the next start (within decision_wait) is stamped before them.
func TestImportShutdownLeavesWaitingSpansWrittenAhead(t *testing.T) {
	store := sessions.NewMemStore()
	fake := clock.NewFake(rigNow)
	r1 := newImportRigOn(t, store, fake, Config{})
	r1.send(node, span("build", 1, 0, 0, changed("artifact")...))
	var kids []Span
	for i := range 20 {
		kids = append(kids, span(fmt.Sprint("compile ", i), byte(30+i), 2, 10+i, changed("artifact")...))
	}
	r1.send(node, kids...)
	if err := r1.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(r1.records()); n != 1 {
		t.Fatalf("%d records after Shutdown, want the root alone: its children wait", n)
	}
	fake.Advance(8 * time.Second)
	r2 := newImportRigOn(t, store, fake, Config{})
	r2.send(node, span("phase", 2, 1, 5, spanbridge.Kind("marks")))
	recs := r2.records()
	if len(recs) != 22 {
		t.Fatalf("%d records, want 22", len(recs))
	}
	if recs[1].Record.Name != "phase" {
		t.Fatalf("stamped %v, want the parent before its 20 children", names(recs))
	}
	if rows := r2.rows(); len(rows) != 1 {
		t.Fatalf("%d sessions, want 1", len(rows))
	}
	if n := countPending(t, store); n != 0 {
		t.Fatalf("%d entries still written ahead, want 0", n)
	}
}

// A span written ahead and sent again after a crash, before its parent
// comes: the restart holds it again from the store, and the one sent
// again is recognised, not held twice.
func TestImportWrittenAheadSentAgainAfterACrash(t *testing.T) {
	store := sessions.NewMemStore()
	fake := clock.NewFake(rigNow)
	r1 := newImportRigOn(t, store, fake, Config{})
	kid := span("compile", 20, 10, 10, changed("artifact")...)
	r1.send(node, kid)
	fake.Advance(3 * time.Second) // the crash: r1 is left as it is
	r2 := newImportRigOn(t, store, fake, Config{})
	if res := r2.send(node, kid); res.Duplicates != 1 {
		t.Fatalf("the waiting span sent again: %+v, want it recognised", res)
	}
	if st := r2.im.Stats(); st.HeldSpans != 1 {
		t.Fatalf("%d spans waiting, want 1", st.HeldSpans)
	}
	r2.send(node, span("phase", 10, 0, 5))
	if got := storedOnce(t, store); len(got) != 2 {
		t.Fatalf("%d spans stored, want 2", len(got))
	}
}
