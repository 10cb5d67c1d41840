package exporter_test

import (
	"context"
	"sync"
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

// A stalled store costs the goroutines ending spans one short wait, not
// one per span: with the queue full behind a write that does not return,
// the first span waits for room and is dropped, and the hundred after it
// are dropped at once. What was queued before is written once the store
// answers.
func TestStalledStoreCostsOneWait(t *testing.T) {
	st := &stalledStore{MemStore: sessions.NewMemStore(), writing: make(chan struct{}), release: make(chan struct{})}
	const queue = 16
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
	// One wait is 20 ms; a wait per span would be 2 s.
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
