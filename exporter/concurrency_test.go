package exporter_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// 8 goroutines each end 50,000 nested spans while others call ForceFlush
// and Label, then Shutdown races with a last burst of span ends: every
// record of a span that ended before Shutdown began is present exactly
// once, seqs are unique, and no goroutine is left behind.
func TestConcurrentSpansFlushesLabelsAndShutdown(t *testing.T) {
	defer goleak.VerifyNone(t)
	const goroutines, perG = 8, 50_000
	dir := filepath.Join(t.TempDir(), "store")
	exp, err := exporter.New(dir, exporter.WithMaxQueueSize(1<<22))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("concurrency")

	// Keep the session before the burst: spans that end before the first
	// change are held within the pending budget, and past it the oldest go
	// (as they should); this test is about what a kept session writes.
	_, keep := tr.Start(context.Background(), "keep", trace.WithAttributes(spanbridge.Kind("work"), spanbridge.Changed(), attribute.Int("g", -1), attribute.Int("i", -1)))
	keep.End()

	var endedBefore atomic.Int64 // spans whose End returned before Shutdown began
	var shuttingDown atomic.Bool
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			for i := 0; i < perG; i += 2 {
				attrs := []attribute.KeyValue{spanbridge.Kind("work"), attribute.Int("g", g), attribute.Int("i", i)}
				ctx, outer := tr.Start(context.Background(), "outer", trace.WithAttributes(attrs...))
				_, inner := tr.Start(ctx, "inner", trace.WithAttributes(spanbridge.Kind("work"), attribute.Int("g", g), attribute.Int("i", i+1)))
				inner.End()
				if !shuttingDown.Load() {
					endedBefore.Add(1)
				}
				outer.End()
				if !shuttingDown.Load() {
					endedBefore.Add(1)
				}
			}
		})
	}
	var side sync.WaitGroup
	side.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := exp.ForceFlush(context.Background()); err != nil {
				t.Errorf("ForceFlush: %v", err)
				return
			}
			exp.Label(fmt.Sprint("label ", n))
			time.Sleep(time.Millisecond)
		}
	})
	// Shut down while the last spans are still ending.
	for endedBefore.Load() < goroutines*perG*9/10 {
		time.Sleep(time.Millisecond)
	}
	// ForceFlush and Label go on while Shutdown runs.
	shuttingDown.Store(true)
	ended := endedBefore.Load()
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(stop)
	side.Wait()
	wg.Wait()
	tp.Shutdown(context.Background())

	r, done := readAll(t, dir)
	defer done()
	seqs := map[uint64]bool{}
	seen := map[[2]int64]bool{}
	for rec, err := range r.All("work") {
		if err != nil {
			t.Fatal(err)
		}
		if seqs[rec.Stamp.Seq] {
			t.Fatalf("seq %d twice", rec.Stamp.Seq)
		}
		seqs[rec.Stamp.Seq] = true
		g, _ := rec.Record.Attributes.Get("g")
		i, _ := rec.Record.Attributes.Get("i")
		k := [2]int64{g.AsInt64(), i.AsInt64()}
		if seen[k] {
			t.Fatalf("record g=%d i=%d twice", k[0], k[1])
		}
		seen[k] = true
	}
	if int64(len(seen)) < ended {
		t.Fatalf("%d records, but %d spans ended before Shutdown; stats %+v", len(seen), ended, exp.Stats())
	}
	st := exp.Stats()
	if st.Dropped != 0 || st.Problems != 0 {
		t.Fatalf("stats = %+v", st)
	}
	var labels []string
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, s.Label)
	}
	if len(labels) != 1 || labels[0] == "" {
		t.Fatalf("sessions' labels = %q, want one labelled session", labels)
	}
	t.Logf("%d records, %d ended before Shutdown, label %q", len(seen), ended, labels[0])
}
