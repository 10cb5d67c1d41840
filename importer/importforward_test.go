package importer

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// handedOn collects what a ForwardOnly Importer hands on: the record ids
// (decoded as the Collector's processor decodes them) and their sessions.
type handedOn struct {
	mu       sync.Mutex
	spans    map[spanRef]int
	sessions map[sessions.SessionID]int
	rows     int
	fail     error // what forward returns, handing nothing on, while set
}

func (h *handedOn) forward(es []sessions.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail != nil {
		return h.fail
	}
	var rec sessions.Stamped[sessions.Record]
	var row sessions.Session
	for _, e := range es {
		kind, err := DecodeEntry(e, &rec, &row)
		switch {
		case err != nil:
		case kind == "sessions":
			h.rows++
		default:
			h.spans[spanRef{Trace: [16]byte(rec.Record.TraceID), Span: [8]byte(rec.Record.SpanID)}]++
			h.sessions[rec.Stamp.Session]++
		}
	}
	return nil
}

// newForwardOnly is a ForwardOnly Importer on dir, handing on to h, on
// the fake clock; its test drives the loop's rounds (tick).
func newForwardOnly(t *testing.T, dir string, h *handedOn, fake *clock.Fake, ic Config) *Importer {
	t.Helper()
	ic.Forward, ic.ForwardOnly = h.forward, true
	im, err := New(dir, ic, WithClock(fake.Now))
	if err != nil {
		t.Fatal(err)
	}
	im.stopLoop()
	return im
}

// An Importer that hands its records on and keeps none (the Collector's
// processor without a directory): stopped and started again, a batch
// sent again is not handed on again, and the sender's next spans
// continue its session under its id, its row handed on again first. The
// store holds no records, and no ids once the dedup window has passed.
func TestImportForwardOnlyTakesOnceAcrossARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	h := &handedOn{spans: map[spanRef]int{}, sessions: map[sessions.SessionID]int{}}
	fake := clock.NewFake(rigNow)
	ic := Config{DedupWindow: time.Minute}
	im := newForwardOnly(t, dir, h, fake, ic)
	b, c := spansOf(1, 50), spansOf(2, 50)
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: b}); err != nil {
		t.Fatal(err)
	}
	if err := im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.Advance(3 * time.Second)
	im = newForwardOnly(t, dir, h, fake, ic)
	defer im.Shutdown(context.Background())
	res, err := im.Import(context.Background(), Batch{Resource: node, Spans: b})
	if err != nil || res.Duplicates != len(b) {
		t.Fatalf("B sent again after the restart: %+v, %v; want all %d recognised", res, err, len(b))
	}
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: c}); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	if len(h.spans) != 100 || len(h.sessions) != 1 || h.rows != 2 {
		t.Errorf("handed on %d spans in %d sessions, %d rows; want 100 in 1, the row before and after the restart", len(h.spans), len(h.sessions), h.rows)
	}
	for ref, n := range h.spans {
		if n != 1 {
			t.Errorf("%v handed on %d times", ref, n)
		}
	}
	h.mu.Unlock()
	for range 12 {
		fake.Advance(sweepEvery)
		im.tick()
	}
	im.Shutdown(context.Background())
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := len(storedRecords(t, st)); n != 0 {
		t.Errorf("%d records in the state directory, want none", n)
	}
	if n := countUnder(t, st, keys.ImportTaken); n != 0 {
		t.Errorf("%d taken entries once the window passed, want 0", n)
	}
}

// A sender that sends for longer than the dedup window: the ids of what
// was handed on before the window are deleted as it moves on, those
// within it kept.
func TestImportForwardOnlyForgetsIDsPastTheWindow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	h := &handedOn{spans: map[spanRef]int{}, sessions: map[sessions.SessionID]int{}}
	fake := clock.NewFake(rigNow)
	im := newForwardOnly(t, dir, h, fake, Config{DedupWindow: time.Minute})
	defer im.Shutdown(context.Background())
	const rounds = 36 // 3 minutes, a batch every 5 s
	for i := range rounds {
		batch := spansOf(byte(i+1), 10)
		for j := range batch {
			batch[j].Start, batch[j].End = fake.Now(), fake.Now()
		}
		if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: batch}); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			fake.Advance(time.Second)
			im.tick()
		}
	}
	n := 0
	if err := im.onStore(context.Background(), func(st sessions.Store) error {
		n = countUnder(t, st, keys.ImportTaken)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A minute of rounds, the marks' spacing and the sweep's period.
	if n < 12 || n > 20 {
		t.Errorf("%d taken entries after %d rounds of 5 s, want about the last minute's 12", n, rounds)
	}
}

// newForwarding is an Importer that keeps records in dir and hands them
// on to h (the Collector's processor with a directory), on the fake
// clock, its loop stopped.
func newForwarding(t *testing.T, dir string, h *handedOn, fake *clock.Fake) *Importer {
	t.Helper()
	im, err := New(dir, Config{Forward: h.forward}, WithClock(fake.Now))
	if err != nil {
		t.Fatal(err)
	}
	im.stopLoop()
	return im
}

// setFail makes h refuse what it is given with err, or take it (nil).
func (h *handedOn) setFail(err error) {
	h.mu.Lock()
	h.fail = err
	h.mu.Unlock()
}

// handedAndStoredOnce checks that h was handed want spans, each once,
// and that the store in dir holds want, each once.
func handedAndStoredOnce(t *testing.T, h *handedOn, dir string, want int) {
	t.Helper()
	h.mu.Lock()
	if len(h.spans) != want {
		t.Errorf("handed on %d spans, want all %d", len(h.spans), want)
	}
	for ref, n := range h.spans {
		if n != 1 {
			t.Errorf("%v handed on %d times, want once", ref, n)
		}
	}
	h.mu.Unlock()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := storedOnce(t, st); len(got) != want {
		t.Errorf("%d spans stored, want %d", len(got), want)
	}
}

// An Importer that keeps records in its directory and hands them on (the
// Collector's processor with a directory): a batch whose handing on
// failed, the process then crashing (the Importer abandoned, never shut
// down), is not acknowledged and is sent again; the restarted Importer
// must hand it on rather than find it stored and drop it as a replay
// (stored before it was handed on, 50 of 100 spans reached downstream).
// Every span reaches downstream, and once: none was handed on before.
func TestImportForwardWithRecordsHandsOnAfterACrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "records")
	h := &handedOn{spans: map[spanRef]int{}, sessions: map[sessions.SessionID]int{}, fail: errors.New("downstream refused")}
	fake := clock.NewFake(rigNow)
	im := newForwarding(t, dir, h, fake)
	b, c := spansOf(1, 50), spansOf(2, 50)
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: b}); err == nil {
		t.Fatal("B taken while downstream refused it: want an error, the sender not told it is stored")
	}
	// The crash: im is left as it is; only the store is let go, as the
	// process's end lets it go.
	if err := im.writer.Close(); err != nil {
		t.Fatal(err)
	}
	im.release()
	fake.Advance(3 * time.Second)
	h.setFail(nil)
	im = newForwarding(t, dir, h, fake)
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: c}); err != nil {
		t.Fatal(err)
	}
	// Sent again once handed on: taken once, not handed on again.
	if res, err := im.Import(context.Background(), Batch{Resource: node, Spans: b}); err != nil || res.Duplicates != len(b) {
		t.Fatalf("B sent again once handed on: %+v, %v; want all %d recognised", res, err, len(b))
	}
	if err := im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	handedAndStoredOnce(t, h, dir, len(b)+len(c))
}

// Downstream refusing when the Importer shuts down: what it could neither
// hand on nor write is not set aside in the store's spool unhanded —
// merged into the store at the next start, the batch sent again was
// found stored and never handed on (50 of 100 spans).
func TestImportForwardWithRecordsShutdownDownstreamDown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "records")
	h := &handedOn{spans: map[spanRef]int{}, sessions: map[sessions.SessionID]int{}}
	fake := clock.NewFake(rigNow)
	im := newForwarding(t, dir, h, fake)
	a, b := spansOf(1, 50), spansOf(2, 50)
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: a}); err != nil {
		t.Fatal(err)
	}
	h.setFail(errors.New("downstream refused"))
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: b}); err == nil {
		t.Fatal("B taken while downstream refused it")
	}
	im.Shutdown(context.Background())
	fake.Advance(3 * time.Second)
	h.setFail(nil)
	im = newForwarding(t, dir, h, fake)
	if _, err := im.Import(context.Background(), Batch{Resource: node, Spans: b}); err != nil {
		t.Fatal(err)
	}
	if err := im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	handedAndStoredOnce(t, h, dir, len(a)+len(b))
}
