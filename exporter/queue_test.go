package exporter_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// stalledStore is a MemStore whose writes, once stalled, wait for
// release: a disk that has stopped answering.
type stalledStore struct {
	*sessions.MemStore
	writing chan struct{} // closed when a write first waits
	release chan struct{}
	once    sync.Once
}

func (s *stalledStore) Write(es []sessions.Entry) error {
	s.once.Do(func() { close(s.writing) })
	<-s.release
	return s.MemStore.Write(es)
}

// stalledSession starts a kept session whose store stalls in its first
// write, with a queue of queue spans, and returns once the loop waits in
// that write; end ends one span of it.
func stalledSession(t *testing.T, queue int) (*stalledStore, *exporter.Exporter, *sdktrace.TracerProvider, func()) {
	t.Helper()
	st := &stalledStore{MemStore: sessions.NewMemStore(), writing: make(chan struct{}), release: make(chan struct{})}
	exp, err := exporter.New("", exporter.WithStore(st), exporter.WithMaxQueueSize(queue))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("stall")
	ctx := context.Background()
	end := func() {
		_, s := tr.Start(ctx, "work", trace.WithAttributes(spanbridge.Kind("work")))
		s.End()
	}
	_, keep := tr.Start(ctx, "keep", trace.WithAttributes(spanbridge.Kind("work"), spanbridge.Changed()))
	keep.End()
	<-st.writing // the loop waits in its first write
	return st, exp, tp, end
}

// A stalled store costs the goroutines ending spans one short wait, not
// one per span: with the queue full behind a write that does not return,
// the first span waits for room and is dropped, and the hundred after it
// are dropped at once. What was queued before is written once the store
// answers.
func TestStalledStoreCostsOneWait(t *testing.T) {
	const queue = 16
	st, exp, tp, end := stalledSession(t, queue)
	ctx := context.Background()
	for range queue {
		end()
	}
	if s := exp.Stats(); s.Queued != queue || s.Dropped != 0 {
		t.Fatalf("queued %d, dropped %d; want %d queued, none dropped", s.Queued, s.Dropped, queue)
	}
	start := time.Now()
	for range 100 {
		end()
	}
	took := time.Since(start)
	if s := exp.Stats(); s.Dropped != 100 {
		t.Fatalf("dropped %d spans of a full queue, want 100", s.Dropped)
	}
	// One wait is fullWait (250 ms); a wait per span would be 25 s.
	if took > time.Second {
		t.Errorf("100 spans on a full queue took %v: they waited for the stalled store one by one", took)
	}
	close(st.release)
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if s := exp.Stats(); s.Written != queue+1 {
		t.Fatalf("written %d records, want %d", s.Written, queue+1)
	}
}

// slowStore is a MemStore whose every write takes a while but makes
// headway, reporting it as badgerstore.WithWriteProgress does: Badger on
// a loaded machine.
type slowStore struct {
	*sessions.MemStore
	exp    *exporter.Exporter
	took   time.Duration // each write
	writes atomic.Int32
	first  chan struct{} // closed when the first write begins
}

func (s *slowStore) Write(es []sessions.Entry) error {
	if s.writes.Add(1) == 1 {
		close(s.first)
	}
	for range s.took / (20 * time.Millisecond) {
		time.Sleep(20 * time.Millisecond)
		s.exp.Storing(1)
	}
	return s.MemStore.Write(es)
}

// A store that writes slowly slows the span calls down rather than losing
// their spans: a write takes more than twice the longest wait for room
// without progress, but the store reports the headway it makes inside the
// write, so with the queue full behind it the next span waits for the
// write to end, and every span is written.
func TestSlowStoreLosesNothing(t *testing.T) {
	st := &slowStore{MemStore: sessions.NewMemStore(), took: 250 * time.Millisecond, first: make(chan struct{})}
	const queue, spans = 16, 64
	exp, err := exporter.New("", exporter.WithStore(st), exporter.WithMaxQueueSize(queue))
	if err != nil {
		t.Fatal(err)
	}
	st.exp = exp
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("slow")
	ctx := context.Background()
	_, keep := tr.Start(ctx, "keep", trace.WithAttributes(spanbridge.Kind("work"), spanbridge.Changed()))
	keep.End()
	<-st.first // the spans come while the loop writes
	start := time.Now()
	for range spans {
		_, s := tr.Start(ctx, "work", trace.WithAttributes(spanbridge.Kind("work")))
		s.End()
	}
	waited := time.Since(start)
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s := exp.Stats()
	if s.Dropped != 0 || s.Written != spans+1 {
		t.Fatalf("written %d, dropped %d of %d spans; want every one written", s.Written, s.Dropped, spans+1)
	}
	// The span after the queue's 16 waited for the first write to end.
	if waited < st.took/2 {
		t.Fatalf("the spans took %v to end: none waited behind the slow write", waited)
	}
}

// The exporter's own store reports the headway of its writes, which the
// spans waiting for room in a full queue take as progress: every record
// written was an entry Badger took.
func TestStoreReportsWriteProgress(t *testing.T) {
	exp, err := exporter.New(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("progress")
	ctx := context.Background()
	for i := range 1000 {
		opts := []trace.SpanStartOption{trace.WithAttributes(spanbridge.Kind("work"))}
		if i == 0 {
			opts = append(opts, trace.WithAttributes(spanbridge.Changed()))
		}
		_, s := tr.Start(ctx, "work", opts...)
		s.End()
	}
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if written, stored := exp.Stats().Written, exp.Stored(); written != 1000 || stored < written {
		t.Errorf("written %d records, the store reported %d entries taken; want 1000 and at least as many", written, stored)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// Once a wait for room ends without progress, spans are dropped without
// waiting only until the store makes progress again, not until the queue
// drains: a store that takes more of its write in progress (here, one
// still blocked) has the next span wait for room rather than be dropped,
// and that span is written when the write ends.
func TestProgressEndsTheDrops(t *testing.T) {
	const queue = 16
	st, exp, tp, end := stalledSession(t, queue)
	ctx := context.Background()
	for range queue + 2 {
		end() // the queue's 16, then one wait that ends without room, then one drop
	}
	if s := exp.Stats(); s.Dropped != 2 {
		t.Fatalf("dropped %d spans behind a stalled store, want 2", s.Dropped)
	}

	// The store makes headway inside its write, every 20 ms.
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			exp.Storing(1)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		time.Sleep(30 * time.Millisecond) // after the first tick
		end()
	}()
	select {
	case <-ended:
		t.Fatalf("a span ended at once beside a store making headway (dropped %d), want it to wait for room", exp.Stats().Dropped)
	case <-time.After(300 * time.Millisecond): // three times the longest wait without progress
	}
	close(st.release)
	<-ended
	close(stop)
	<-ticked
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if s := exp.Stats(); s.Dropped != 2 || s.Written != queue+2 {
		t.Fatalf("written %d, dropped %d; want %d written and the 2 dropped during the stall", s.Written, s.Dropped, queue+2)
	}
}
