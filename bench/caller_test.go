//go:build bench && linux

package bench

import (
	"context"
	"iter"
	"runtime"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The benchmarks of this file are diagnostics, not figures: they explain
// figure 3. Its cpu-ns/op and allocs/op count the whole process: with our
// processor, that includes whatever runs in the background (mapping,
// encoding and writing every span, and Badger's own goroutines), beside the
// caller on a second core. These split off what the caller itself pays.

// BenchmarkHotPathCaller reports the CPU time of the goroutine that starts
// and ends the spans (locked to its thread, so the thread's CPU time is
// its own: its span calls, and the garbage collection its allocations
// assist), per span.
func BenchmarkHotPathCaller(b *testing.B) {
	for _, p := range []provider{bsp, warm, kept} {
		b.Run(p.name, func(b *testing.B) {
			tp, _ := p.make(b)
			defer checkShutdown(b, tp)
			tr := tp.Tracer("bench")
			ctx := context.Background()
			settle()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := threadCPU(b)
			b.ResetTimer()
			endSpans(ctx, tr, 0, b.N)
			b.StopTimer()
			b.ReportMetric(float64(threadCPU(b)-before)/float64(b.N), "caller-cpu-ns/op")
		})
	}
}

// threadCPU returns the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD: this thread, not the process
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHotPathQueued measures the span calls alone, with our
// background goroutine held still: the session is kept, but its first
// write blocks until the benchmark ends, so OnEnd queues every span and
// nothing maps, encodes or writes them meanwhile. ns/op and allocs/op are
// then the caller's own, beside the BatchSpanProcessor's. Run it with a
// -benchtime below the exporter's queue size (10000x).
func BenchmarkHotPathQueued(b *testing.B) {
	b.Run("otelrecords", func(b *testing.B) {
		st := &stuckStore{writing: make(chan struct{}), release: make(chan struct{})}
		exp, err := exporter.New("", exporter.WithStore(st), exporter.WithLevel(sessions.LevelBasic))
		if err != nil {
			b.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
		defer checkShutdown(b, tp)
		defer close(st.release)
		tr := tp.Tracer("bench")
		ctx := context.Background()
		_, s := tr.Start(ctx, "keep", trace.WithAttributes(spanbridge.Changed()))
		s.End()
		<-st.writing // the loop is stuck in its first write
		settle()
		b.ReportAllocs()
		b.ResetTimer()
		endSpans(ctx, tr, 0, b.N)
		b.StopTimer()
		if q := exp.Stats().Queued; q != int64(b.N) {
			b.Fatalf("%d spans queued, want %d: the benchmark needs -benchtime below the queue size", q, b.N)
		}
	})
	b.Run(bsp.name, func(b *testing.B) {
		tp, _ := bsp.make(b)
		defer checkShutdown(b, tp)
		settle()
		b.ReportAllocs()
		b.ResetTimer()
		endSpans(context.Background(), tp.Tracer("bench"), 0, b.N)
	})
}

// stuckStore is a sessions.Store whose Write announces itself on writing
// and then waits for release.
type stuckStore struct {
	writing, release chan struct{}
	once             bool
}

func (s *stuckStore) Write([]sessions.Entry) error {
	if !s.once {
		s.once = true
		close(s.writing)
	}
	<-s.release
	return nil
}

func (s *stuckStore) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(func(sessions.Entry, error) bool) {}
}

func (s *stuckStore) DeleteRange([]byte, []byte, func([]byte) bool) (int, error) { return 0, nil }
func (s *stuckStore) Close() error                                               { return nil }
