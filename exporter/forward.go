package exporter

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

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Forwarding: defaults, named so they are documented where declared.
const (
	// DefaultForwardBatch is how many spans one ExportSpans call of the
	// forward exporter gets at most: the BatchSpanProcessor's default.
	DefaultForwardBatch = 512
	// DefaultForwardTimeout bounds one ExportSpans call of the forward
	// exporter, and Shutdown's wait for it when Shutdown's context has no
	// deadline. The OTLP exporters bound their own calls (10 seconds by
	// default); this bound is for exporters that do not.
	DefaultForwardTimeout = 30 * time.Second
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

// WithForward sends the spans of kept sessions to exp as well — an
// OTLP exporter to a Collector or Jaeger, say — so that a central backend
// receives the traces of the runs that changed something, and nothing of
// the runs that found everything cached. It is a tail sampler at the level
// of the session, in the process:
//
//   - Until the session is kept (its first changed record), its ended spans
//     are held in memory, in order, within the same pending budget as the
//     records (WithPendingBudget; counted separately, as an estimate of
//     each span's memory: see ForwardStats.HeldBytes), the oldest dropped
//     first.
//   - When the session is kept, the held spans are sent first, in the order
//     they ended, then every later span as it ends.
//   - A session never kept sends nothing: Shutdown lets its held spans go.
//
// Spans are exported in batches of up to DefaultForwardBatch from a
// goroutine of the forwarder's own, never on the caller's span call, and
// never holding up the records: a slow or unreachable backend only fills
// the forward queue (bounded like the span queue, WithMaxQueueSize; past
// it spans are dropped and counted). ForceFlush returns once every span
// ended before it was exported (or failed), and Shutdown exports what is
// queued and shuts exp down. Export errors go to otel.Handle, once per
// failing streak, and to ForceFlush's caller.
//
// A span is forwarded as it ended, records.* attributes included, except
// that below LevelFull its heavy attributes (records.full.*) are left out,
// as they are from the records: the level says what leaves the process.
// Only spans this exporter stamps are forwarded: none at LevelOff.
func WithForward(exp sdktrace.SpanExporter) Option {
	return func(c *config) { c.forward = exp }
}

// ForwardStats counts what the forwarder did (see WithForward). All zero
// without WithForward.
type ForwardStats struct {
	// Sent is how many spans the forward exporter accepted.
	Sent int64
	// Failed is how many spans were in exports that returned an error.
	Failed int64
	// Held is how many spans are held now, waiting for the session to be
	// kept, and HeldBytes their estimated memory, counted against the
	// pending budget.
	Held, HeldBytes int64
	// Evicted is how many held spans the pending budget pushed out.
	Evicted int64
	// Queued is how many spans of the kept session wait to be exported.
	Queued int64
	// Dropped is how many spans of the kept session were not exported
	// because the forward queue was full, or Shutdown's context ended
	// first.
	Dropped int64
}

// ForwardStats returns the forwarder's counters.
func (e *Exporter) ForwardStats() ForwardStats {
	f := e.fwd
	if f == nil {
		return ForwardStats{}
	}
	f.mu.Lock()
	q := len(f.outbox)
	f.mu.Unlock()
	return ForwardStats{
		Sent:      f.sent.Load(),
		Failed:    f.failed.Load(),
		Held:      f.heldCount.Load(),
		HeldBytes: f.heldBytesNow.Load(),
		Evicted:   f.evicted.Load(),
		Queued:    int64(q),
		Dropped:   f.dropped.Load(),
	}
}

// forward hands an ended span to the forwarder, if there is one. The
// exporter's loop calls it for every span it records, after routing the
// record, so the session is kept by then if this span kept it.
func (e *Exporter) forward(s sdktrace.ReadOnlySpan) {
	if e.fwd == nil {
		return
	}
	e.fwd.add(s, e.rec.Kept(), e.rec.Level())
}

// forwarder is WithForward's tail sampler. The exporter's loop goroutine
// calls add; a goroutine of its own exports, so the loop never waits on
// the network.
type forwarder struct {
	exp      sdktrace.SpanExporter
	budget   int // bytes of held spans allowed; 0 holds nothing
	maxQueue int

	// Owned by the exporter's loop goroutine.
	held      []heldSpan
	heldBytes int
	kept      bool

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

type heldSpan struct {
	span  sdktrace.ReadOnlySpan
	bytes int
}

// newForwarder returns the forwarder for exp, or nil when exp is nil.
// budget follows sessions.Config.PendingBudget: 0 is the default, negative
// holds nothing.
func newForwarder(exp sdktrace.SpanExporter, budget, maxQueue int) *forwarder {
	if exp == nil {
		return nil
	}
	switch {
	case budget == 0:
		budget = sessions.DefaultPendingBudget
	case budget < 0:
		budget = 0
	}
	f := &forwarder{
		exp:      exp,
		budget:   budget,
		maxQueue: max(maxQueue, 1),
		moved:    make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	f.abort, f.cancel = context.WithCancel(context.Background())
	go f.run()
	return f
}

// add holds s until the session is kept, or queues it for export once it
// is: the held spans first.
func (f *forwarder) add(s sdktrace.ReadOnlySpan, kept bool, level sessions.Level) {
	s = withoutHeavy(s, level)
	if !kept {
		f.hold(s)
		return
	}
	if !f.kept {
		f.kept = true
		spans := make([]sdktrace.ReadOnlySpan, 0, len(f.held)+1)
		for _, h := range f.held {
			spans = append(spans, h.span)
		}
		f.held, f.heldBytes = nil, 0
		f.heldCount.Store(0)
		f.heldBytesNow.Store(0)
		f.send(append(spans, s)...)
		return
	}
	f.send(s)
}

// hold appends s to the held spans, then drops the oldest until they fit
// the budget; a span larger than the budget on its own empties them,
// itself included, as the records' buffer does.
func (f *forwarder) hold(s sdktrace.ReadOnlySpan) {
	n := spanBytes(s)
	f.held = append(f.held, heldSpan{s, n})
	f.heldBytes += n
	drop := 0
	for f.heldBytes > f.budget && drop < len(f.held) {
		f.heldBytes -= f.held[drop].bytes
		f.held[drop] = heldSpan{}
		drop++
	}
	if drop > 0 {
		f.evicted.Add(int64(drop))
		f.held = f.held[drop:]
		// Give the backing array back once it is mostly dead, so a
		// session that never changes anything holds no more than its
		// budget.
		if len(f.held) == 0 {
			f.held = nil
		} else if cap(f.held) > 64 && len(f.held) < cap(f.held)/4 {
			f.held = append([]heldSpan(nil), f.held...)
		}
	}
	f.heldCount.Store(int64(len(f.held)))
	f.heldBytesNow.Store(int64(f.heldBytes))
}

// send queues spans for the sender, dropping (and counting) those the
// queue has no room for.
func (f *forwarder) send(spans ...sdktrace.ReadOnlySpan) {
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

func (f *forwarder) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run is the sender: it exports the outbox in batches, oldest first,
// until Shutdown has closed it and it is empty.
func (f *forwarder) run() {
	defer close(f.done)
	for {
		f.mu.Lock()
		n := min(len(f.outbox), DefaultForwardBatch)
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
func (f *forwarder) export(batch []sdktrace.ReadOnlySpan) error {
	if f.abort.Err() != nil {
		f.dropped.Add(int64(len(batch)))
		return nil
	}
	ctx, cancel := context.WithTimeout(f.abort, DefaultForwardTimeout)
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
func (f *forwarder) finish(n int, err error) {
	f.mu.Lock()
	f.finished += uint64(n)
	f.lastErr = err
	close(f.moved)
	f.moved = make(chan struct{})
	f.mu.Unlock()
}

// flush waits until every span queued before it is exported (or failed),
// and returns the error of the last export, if it failed, or ctx's: as
// ForceFlush does for the records' last write.
func (f *forwarder) flush(ctx context.Context) error {
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

// shutdown lets the held spans go (their session was never kept), exports
// what is queued and shuts the exporter down, within ctx — or
// DefaultForwardTimeout when ctx has no deadline. The exporter's loop
// calls it once, after its last span. Spans still queued when the time is
// up are dropped and counted.
func (f *forwarder) shutdown(ctx context.Context) error {
	if f == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultForwardTimeout)
		defer cancel()
	}
	f.held, f.heldBytes = nil, 0
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
