package exporter_test

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
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// sink is a forward exporter that remembers what it was sent and whether
// it was shut down; it can be made to fail, or to block until released.
type sink struct {
	mu      sync.Mutex
	spans   []tracetest.SpanStub
	batches []int
	shut    bool
	err     error
	release chan struct{} // when not nil, ExportSpans waits for it (or ctx)
}

func (s *sink) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	s.mu.Lock()
	release, err := s.release, s.err
	s.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spans = append(s.spans, tracetest.SpanStubsFromReadOnlySpans(spans)...)
	s.batches = append(s.batches, len(spans))
	return nil
}

func (s *sink) Shutdown(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shut = true
	return nil
}

func (s *sink) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.spans))
	for i, sp := range s.spans {
		out[i] = sp.Name
	}
	return out
}

func (s *sink) isShut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shut
}

func flush(t *testing.T, p *provider) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.exp.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
}

func TestForwardWarmSessionSendsNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	out := &sink{}
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out))
	ctx, phase := p.span(context.Background(), "tune")
	for i := range 5 {
		_, s := p.span(ctx, fmt.Sprint("tune key ", i), spanbridge.Kind("autotune"), attribute.Bool("cached", true))
		s.End()
	}
	phase.End()
	flush(t, p)
	if got := out.names(); len(got) != 0 {
		t.Fatalf("a warm session forwarded %q", got)
	}
	if fs := p.exp.ForwardStats(); fs.Held != 6 || fs.Sent != 0 {
		t.Fatalf("ForwardStats %+v; want 6 held, none sent", fs)
	}
	p.shutdown(t)
	if got := out.names(); len(got) != 0 || !out.isShut() {
		t.Fatalf("after Shutdown: forwarded %q, exporter shut down %v", got, out.isShut())
	}
	if fs := p.exp.ForwardStats(); fs.Held != 0 || fs.HeldBytes != 0 {
		t.Fatalf("ForwardStats after Shutdown %+v; want nothing held", fs)
	}
}

func TestForwardColdSessionSendsEverythingInOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	out := &sink{}
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out))
	var want []string
	ctx, phase := p.span(context.Background(), "tune")
	for i := range 3 {
		name := fmt.Sprint("cached ", i)
		_, s := p.span(ctx, name, spanbridge.Kind("autotune"))
		s.End()
		want = append(want, name)
	}
	_, s := p.span(ctx, "tuned", spanbridge.Kind("autotune"), spanbridge.Changed())
	s.End()
	want = append(want, "tuned")
	flush(t, p)
	// What was held went out, first, in the order the spans ended.
	if got := out.names(); !slices.Equal(got, want) {
		t.Fatalf("forwarded %q, want %q", got, want)
	}
	for i := range 3 {
		name := fmt.Sprint("after ", i)
		_, s := p.span(ctx, name)
		s.End()
		want = append(want, name)
	}
	phase.End()
	want = append(want, "tune")
	p.shutdown(t)
	if got := out.names(); !slices.Equal(got, want) {
		t.Fatalf("forwarded %q, want %q", got, want)
	}
	if !out.isShut() {
		t.Fatal("Shutdown did not shut the forward exporter down")
	}
	if fs := p.exp.ForwardStats(); fs.Sent != int64(len(want)) || fs.Held != 0 || fs.Dropped != 0 || fs.Failed != 0 {
		t.Fatalf("ForwardStats %+v", fs)
	}
	// The forwarded spans are the spans themselves: ids, control attributes.
	sp := out.spans[3]
	if !sp.SpanContext.IsValid() || !slices.Contains(sp.Attributes, spanbridge.Changed()) {
		t.Fatalf("forwarded span %+v", sp)
	}
}

func TestForwardHoldsWithinThePendingBudget(t *testing.T) {
	const budget = 4000
	out := &sink{}
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out), exporter.WithPendingBudget(budget))
	const n = 50
	for i := range n {
		p.do(fmt.Sprintf("held %02d", i), spanbridge.Kind("autotune"))
	}
	flush(t, p)
	fs := p.exp.ForwardStats()
	if fs.Held == 0 || fs.HeldBytes > budget || fs.Evicted != n-fs.Held {
		t.Fatalf("ForwardStats %+v; want some held within %d bytes, the rest evicted", fs, budget)
	}
	// Identical spans: each counts the same, and one more would not fit.
	if per := fs.HeldBytes / fs.Held; fs.HeldBytes+per <= budget {
		t.Fatalf("held %d spans of %d bytes in a budget of %d: room for one more", fs.Held, per, budget)
	}
	p.do("changed", spanbridge.Kind("autotune"), spanbridge.Changed())
	p.shutdown(t)
	// The newest held ones go, oldest of them first, then the change.
	var want []string
	for i := n - int(fs.Held); i < n; i++ {
		want = append(want, fmt.Sprintf("held %02d", i))
	}
	want = append(want, "changed")
	if got := out.names(); !slices.Equal(got, want) {
		t.Fatalf("forwarded %q, want %q", got, want)
	}
}

func TestForwardZeroBudgetHoldsNothing(t *testing.T) {
	out := &sink{}
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out), exporter.WithPendingBudget(0))
	p.do("observed", spanbridge.Kind("autotune"))
	p.do("changed", spanbridge.Kind("autotune"), spanbridge.Changed())
	p.do("later")
	p.shutdown(t)
	if got := out.names(); !slices.Equal(got, []string{"changed", "later"}) {
		t.Fatalf("forwarded %q", got)
	}
}

func TestForwardLeavesHeavyAttributesBelowFull(t *testing.T) {
	for _, level := range []sessions.Level{sessions.LevelBasic, sessions.LevelFull} {
		out := &sink{}
		p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out), exporter.WithLevel(level))
		_, s := p.span(context.Background(), "compile", spanbridge.Kind("compile"), spanbridge.Changed(),
			attribute.String("kernel", "matmul"), spanbridge.Full(attribute.String("source", "kernel void ...")))
		s.AddEvent("codegen", trace.WithAttributes(attribute.Int("lines", 42), spanbridge.Full(attribute.String("ir", "..."))))
		s.End()
		p.shutdown(t)
		sp := out.spans[0]
		has := func(kvs []attribute.KeyValue, key string) bool {
			return slices.ContainsFunc(kvs, func(kv attribute.KeyValue) bool { return string(kv.Key) == key })
		}
		heavy := has(sp.Attributes, spanbridge.FullPrefix+"source") || has(sp.Events[0].Attributes, spanbridge.FullPrefix+"ir")
		if heavy != (level == sessions.LevelFull) || !has(sp.Attributes, "kernel") || !has(sp.Events[0].Attributes, "lines") {
			t.Errorf("level %v: forwarded attributes %v, events %v", level, sp.Attributes, sp.Events)
		}
	}
}

func TestForwardNeverHoldsUpSpansOrRecords(t *testing.T) {
	out := &sink{release: make(chan struct{})}
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out), exporter.WithMaxQueueSize(100))
	errs := captureErrors(t)
	p.do("changed", spanbridge.Kind("autotune"), spanbridge.Changed())
	const n = 1000
	var calls time.Duration
	for i := range n {
		begin := time.Now()
		p.do(fmt.Sprint("span ", i), spanbridge.Kind("work"))
		calls += time.Since(begin)
		// Let the loop keep up, so the span queue (also 100) drops
		// nothing: the drops below are the forward queue's.
		for i%50 == 0 && p.exp.Stats().Queued > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if calls > 5*time.Second {
		t.Fatalf("%d span calls took %v with the forward exporter stuck", n, calls)
	}
	// The records are written while the forward exporter is stuck...
	deadline := time.Now().Add(10 * time.Second)
	for p.exp.Stats().Written < n+1 {
		if time.Now().After(deadline) {
			t.Fatalf("records stuck behind the forward exporter: %+v", p.exp.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// ...and the forward queue, bounded, dropped what it had no room for.
	fs := p.exp.ForwardStats()
	if fs.Dropped == 0 || fs.Queued > 100 {
		t.Fatalf("ForwardStats %+v; want drops past a queue of 100", fs)
	}
	if !slices.ContainsFunc(errs.All(), func(err error) bool { return strings.Contains(err.Error(), "forward queue full") }) {
		t.Errorf("no report of the full queue; reported %v", errs.All())
	}
	// A ForceFlush waits for the forward exporter, within its context.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.exp.ForceFlush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ForceFlush with a stuck forward exporter: %v", err)
	}
	close(out.release)
	p.shutdown(t)
	fs = p.exp.ForwardStats()
	if fs.Sent+fs.Dropped != n+1 || fs.Queued != 0 {
		t.Fatalf("ForwardStats %+v; want every span sent or dropped", fs)
	}
	for _, b := range out.batches {
		if b > exporter.DefaultForwardBatch {
			t.Fatalf("a batch of %d spans", b)
		}
	}
}

func TestForwardErrors(t *testing.T) {
	errs := captureErrors(t)
	out := &sink{err: errors.New("backend unavailable")}
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out))
	p.do("changed", spanbridge.Kind("autotune"), spanbridge.Changed())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.exp.ForceFlush(ctx); err == nil || !strings.Contains(err.Error(), "backend unavailable") {
		t.Fatalf("ForceFlush: %v; want the export error", err)
	}
	p.do("later")
	if err := p.Shutdown(ctx); err == nil || !strings.Contains(err.Error(), "backend unavailable") {
		t.Fatalf("Shutdown: %v; want the export error", err)
	}
	if fs := p.exp.ForwardStats(); fs.Failed != 2 || fs.Sent != 0 {
		t.Fatalf("ForwardStats %+v", fs)
	}
	// Reported once for the failing streak, not once per batch.
	n := 0
	for _, err := range errs.All() {
		if strings.Contains(err.Error(), "backend unavailable") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the failure reached otel.Handle %d times", n)
	}
}

func TestForwardShutdownHonoursItsContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	out := &sink{release: make(chan struct{})} // never released
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(out))
	p.do("changed", spanbridge.Kind("autotune"), spanbridge.Changed())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := p.Shutdown(ctx)
	if took := time.Since(begin); err == nil || took > 5*time.Second {
		t.Fatalf("Shutdown with a stuck forward exporter: %v after %v", err, took)
	}
	// The loop finishes on its own once the context ended: the stuck
	// export is abandoned, the exporter shut down, and no goroutine left.
	deadline := time.Now().Add(5 * time.Second)
	for !out.isShut() {
		if time.Now().After(deadline) {
			t.Fatal("the forward exporter was never shut down")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Forward the spans of kept sessions to a central backend: here an
// in-memory exporter stands in for otlptracegrpc.New(ctx, ...).
func ExampleWithForward() {
	ctx := context.Background()
	for _, run := range []string{"warm", "cold"} {
		backend := tracetest.NewInMemoryExporter()
		rec, err := exporter.New("", exporter.WithStore(sessions.NewMemStore()), exporter.WithForward(backend))
		if err != nil {
			fmt.Println(err)
			return
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		tr := tp.Tracer("build")
		_, lookup := tr.Start(ctx, "lookup matmul", spanbridge.Record("autotune")...)
		lookup.End()
		if run == "cold" {
			_, tune := tr.Start(ctx, "tune matmul", spanbridge.Record("autotune", spanbridge.Changed())...)
			tune.End()
		}
		_ = rec.ForceFlush(ctx) // returns once what was kept is exported
		fmt.Printf("%s run: %d spans forwarded\n", run, len(backend.GetSpans()))
		_ = tp.Shutdown(ctx)
	}
	// Output:
	// warm run: 0 spans forwarded
	// cold run: 2 spans forwarded
}
