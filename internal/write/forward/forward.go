// Package forward sends the spans of kept sessions to another
// SpanExporter: exporter.WithForward's tail sampler. It holds spans in
// package hold's buffer, the one the Recorder holds records in, and learns
// that the session was kept through the same moment the Recorder keeps it
// (Keep, the "session kept" hook), so "hold until kept" is written once.
package forward

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/ground/hold"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The estimated memory of a held span, in bytes: a span the SDK ended
// measures about 420 bytes on a 64-bit machine before its attributes
// (an attribute adds about 64, plus its strings). Counting these rather
// than encoding every span keeps the estimate cheap.
const (
	heldSpanBytes  = 448
	heldAttrBytes  = 64
	heldEventBytes = 96
)

// Forwarder is the exporter's tail sampler at the level of the session
// (exporter.WithForward): it holds a session's ended spans until the
// session is kept — in the same buffer the Recorder holds records in,
// package hold, within the same budget — then sends them, and every later
// span, to a SpanExporter. The exporter's loop goroutine calls Add and
// Keep; a goroutine of the Forwarder's own exports, so the loop never
// waits on the network.
type Forwarder struct {
	exp      sdktrace.SpanExporter
	maxQueue int
	batch    int
	timeout  time.Duration

	// Owned by the exporter's loop goroutine.
	held *hold.Buffer[sdktrace.ReadOnlySpan]
	kept bool

	mu       sync.Mutex // guards the fields below
	outbox   []sdktrace.ReadOnlySpan
	queued   uint64        // spans ever put in the outbox
	finished uint64        // spans the sender has exported, failed or dropped
	moved    chan struct{} // closed, and replaced, when finished moves
	lastErr  error         // the last export's
	closing  bool

	wake   chan struct{}
	abort  context.Context // ended when Shutdown's context ends
	cancel context.CancelFunc
	done   chan struct{}

	sent, failed, evicted, dropped atomic.Int64
	heldCount, heldBytesNow        atomic.Int64 // mirrors for ForwardStats
	reportedFull                   atomic.Bool

	failing bool // owned by the sender: the last export failed
}

// Config says how a Forwarder holds and sends spans.
type Config struct {
	// Budget is the byte budget of held spans, as estimated (the memory a
	// span keeps alive); 0 or less holds nothing.
	Budget int
	// MaxQueue is how many spans of a kept session may wait to be sent;
	// past it they are dropped and counted.
	MaxQueue int
	// Batch is how many spans one ExportSpans call gets at most.
	Batch int
	// Timeout bounds one ExportSpans call, and Shutdown's wait when its
	// context has no deadline.
	Timeout time.Duration
}

// Stats counts what a Forwarder did.
type Stats struct {
	Sent, Failed, Held, HeldBytes, Evicted, Queued, Dropped int64
}

// New returns a Forwarder sending to exp, or nil when exp is nil; a nil
// Forwarder's methods do nothing.
func New(exp sdktrace.SpanExporter, c Config) *Forwarder {
	if exp == nil {
		return nil
	}
	f := &Forwarder{
		exp:      exp,
		held:     hold.New[sdktrace.ReadOnlySpan](c.Budget),
		maxQueue: max(c.MaxQueue, 1),
		batch:    max(c.Batch, 1),
		timeout:  c.Timeout,
		moved:    make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	f.abort, f.cancel = context.WithCancel(context.Background())
	go f.run()
	return f
}

// Add holds s until the session is kept (see Keep), or queues it for
// export once it is. Below LevelFull, heavy attributes (records.full.*)
// are left out: the level says what leaves the process.
func (f *Forwarder) Add(s sdktrace.ReadOnlySpan, level sessions.Level) {
	if f == nil {
		return
	}
	s = withoutHeavy(s, level)
	if f.kept {
		f.send(s)
		return
	}
	f.evicted.Add(int64(f.held.Hold(s, spanBytes(s))))
	f.heldCount.Store(int64(f.held.Len()))
	f.heldBytesNow.Store(int64(f.held.Counted()))
}

// Keep is the "session kept" hook: the spans held so far are queued for
// export, oldest first, and every later span is sent as it is added.
func (f *Forwarder) Keep() {
	if f == nil || f.kept {
		return
	}
	f.kept = true
	spans := make([]sdktrace.ReadOnlySpan, 0, f.held.Len())
	f.held.Each(func(s sdktrace.ReadOnlySpan, _ []byte) { spans = append(spans, s) })
	f.held.Reset()
	f.heldCount.Store(0)
	f.heldBytesNow.Store(0)
	f.send(spans...)
}

// Stats returns the forwarder's counters; all zero for a nil Forwarder.
func (f *Forwarder) Stats() Stats {
	if f == nil {
		return Stats{}
	}
	f.mu.Lock()
	q := len(f.outbox)
	f.mu.Unlock()
	return Stats{
		Sent:      f.sent.Load(),
		Failed:    f.failed.Load(),
		Held:      f.heldCount.Load(),
		HeldBytes: f.heldBytesNow.Load(),
		Evicted:   f.evicted.Load(),
		Queued:    int64(q),
		Dropped:   f.dropped.Load(),
	}
}

// send queues spans for the sender, dropping (and counting) those the
// queue has no room for.
func (f *Forwarder) send(spans ...sdktrace.ReadOnlySpan) {
	f.mu.Lock()
	if f.closing {
		f.mu.Unlock()
		return
	}
	room := max(f.maxQueue-len(f.outbox), 0)
	over := max(len(spans)-room, 0)
	spans = spans[:len(spans)-over]
	first := len(f.outbox) == 0
	f.outbox = append(f.outbox, spans...)
	f.queued += uint64(len(spans))
	f.mu.Unlock()
	if over > 0 {
		f.dropped.Add(int64(over))
		if !f.reportedFull.Swap(true) {
			otel.Handle(fmt.Errorf("otelrecords: forward queue full (%d spans): the forward exporter is slower than the spans end; dropping spans (reported once; see ForwardStats().Dropped)", f.maxQueue))
		}
	}
	if first && len(spans) > 0 {
		f.signal()
	}
}

func (f *Forwarder) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run is the sender: it exports the outbox in batches, oldest first,
// until Shutdown has closed it and it is empty.
func (f *Forwarder) run() {
	defer close(f.done)
	for {
		f.mu.Lock()
		n := min(len(f.outbox), f.batch)
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, f.outbox)
		clear(f.outbox[:n])
		f.outbox = f.outbox[n:]
		if len(f.outbox) == 0 {
			f.outbox = nil // a burst's backing array goes with it
		}
		closing := f.closing
		f.mu.Unlock()
		if n == 0 {
			if closing {
				return
			}
			<-f.wake
			continue
		}
		f.finish(n, f.export(batch))
	}
}

// export sends one batch, unless Shutdown's context has ended, in which
// case the batch is dropped.
func (f *Forwarder) export(batch []sdktrace.ReadOnlySpan) error {
	if f.abort.Err() != nil {
		f.dropped.Add(int64(len(batch)))
		return nil
	}
	ctx, cancel := context.WithTimeout(f.abort, f.timeout)
	defer cancel()
	err := f.exp.ExportSpans(ctx, batch)
	if err == nil {
		f.sent.Add(int64(len(batch)))
		f.failing = false
		return nil
	}
	f.failed.Add(int64(len(batch)))
	err = fmt.Errorf("otelrecords: forwarding %d spans: %w", len(batch), err)
	if !f.failing {
		f.failing = true
		otel.Handle(fmt.Errorf("%w (reported once until an export succeeds; see ForwardStats().Failed)", err))
	}
	return err
}

// finish records that n more spans are done with, and how their export
// went, and wakes ForceFlush calls waiting for them.
func (f *Forwarder) finish(n int, err error) {
	f.mu.Lock()
	f.finished += uint64(n)
	f.lastErr = err
	close(f.moved)
	f.moved = make(chan struct{})
	f.mu.Unlock()
}

// Flush waits until every span queued before it is exported (or failed),
// and returns the error of the last export, if it failed, or ctx's: as
// ForceFlush does for the records' last write.
func (f *Forwarder) Flush(ctx context.Context) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	target := f.queued
	for f.finished < target {
		moved := f.moved
		f.mu.Unlock()
		select {
		case <-moved:
		case <-f.done:
			return nil // shut down: nothing more will be sent
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	return f.lastErr
}

// Shutdown lets the held spans go (their session was never kept), exports
// what is queued and shuts the exporter down, within ctx — or the
// configured Timeout when ctx has no deadline. The exporter's loop calls
// it once, after its last span. Spans still queued when the time is
// up are dropped and counted.
func (f *Forwarder) Shutdown(ctx context.Context) error {
	if f == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	f.held.Reset()
	f.heldCount.Store(0)
	f.heldBytesNow.Store(0)
	f.mu.Lock()
	f.closing = true
	f.mu.Unlock()
	f.signal()

	var err error
	select {
	case <-f.done:
	case <-ctx.Done():
		// Abort the export in flight; the sender drops the rest.
		f.cancel()
		<-f.done
		err = fmt.Errorf("otelrecords: forwarding: %w before every span was sent (see ForwardStats().Dropped)", ctx.Err())
	}
	f.cancel()
	// The sender is gone: if its last export failed, say so.
	f.mu.Lock()
	err = errors.Join(err, f.lastErr)
	f.mu.Unlock()
	return errors.Join(err, f.exp.Shutdown(ctx))
}

// spanBytes estimates the memory a held span keeps alive.
func spanBytes(s sdktrace.ReadOnlySpan) int {
	n := heldSpanBytes + len(s.Name()) + attrsBytes(s.Attributes())
	for _, e := range s.Events() {
		n += heldEventBytes + len(e.Name) + attrsBytes(e.Attributes)
	}
	for _, l := range s.Links() {
		n += heldEventBytes + attrsBytes(l.Attributes)
	}
	return n
}

func attrsBytes(kvs []attribute.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += heldAttrBytes + len(kv.Key)
		switch kv.Value.Type() {
		case attribute.STRING:
			n += len(kv.Value.AsString())
		case attribute.STRINGSLICE:
			for _, s := range kv.Value.AsStringSlice() {
				n += 16 + len(s)
			}
		case attribute.BOOLSLICE:
			n += len(kv.Value.AsBoolSlice())
		case attribute.INT64SLICE:
			n += 8 * len(kv.Value.AsInt64Slice())
		case attribute.FLOAT64SLICE:
			n += 8 * len(kv.Value.AsFloat64Slice())
		}
	}
	return n
}

// withoutHeavy returns s as it leaves the process at level: below
// LevelFull without its heavy (records.full.*) attributes (see
// spanbridge.AtLevel), or s itself when that leaves nothing out.
func withoutHeavy(s sdktrace.ReadOnlySpan, level sessions.Level) sdktrace.ReadOnlySpan {
	all := s.Attributes()
	attrs := spanbridge.AtLevel(all, level)
	events := s.Events()
	var evCut bool
	for i, e := range events {
		if a := spanbridge.AtLevel(e.Attributes, level); len(a) < len(e.Attributes) {
			if !evCut {
				events, evCut = append([]sdktrace.Event(nil), events...), true
			}
			events[i].Attributes = a
		}
	}
	if len(attrs) == len(all) && !evCut {
		return s
	}
	return lightSpan{ReadOnlySpan: s, attrs: attrs, events: events}
}

// lightSpan is an ended span seen without its heavy attributes.
type lightSpan struct {
	sdktrace.ReadOnlySpan
	attrs  []attribute.KeyValue
	events []sdktrace.Event
}

func (s lightSpan) Attributes() []attribute.KeyValue { return s.attrs }
func (s lightSpan) Events() []sdktrace.Event         { return s.events }
