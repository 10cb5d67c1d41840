package exporter

import (
	"context"
	"errors"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// DefaultShutdownWait bounds how long Shutdown waits for the store to
// close when its context has no deadline.
const DefaultShutdownWait = 5 * time.Second

// busyWait bounds how long a background write waits for a store another
// process holds before the store spools the records, so that records do
// not pile up in memory behind a store that stays busy.
const busyWait = intake.BusyWait

// pressureSpans is how many spans, and records of the write, may wait in
// memory while a background write waits for a busy store (half the queue,
// if that is less; and no more spans than make the loop take them,
// wakeAt): past it the write stops waiting and spools what it holds, and
// the loop takes the queue, so that spans are neither dropped for a full
// queue nor held without bound while another process holds the store
// (issue 11.11). 8,192 spans, a few MiB.
const pressureSpans = 8192

// retryInterval is how long the loop waits before writing again after a
// write failed for another reason than a busy store (a full disk, say):
// the records stay queued meanwhile.
const retryInterval = time.Second

// writeInterval is how long a kept session's records wait to be written
// with those that follow them: one write (a Badger batch, a statfs, a
// commit) per interval rather than per wake costs a third less CPU per
// span at 20,000 spans a second (issue 12). ForceFlush, Shutdown and
// writeAt bytes of records write at once.
const writeInterval = 50 * time.Millisecond

// writeAt is how many bytes of records (keys and values) are written
// without waiting for writeInterval: about 2,500 records, which Badger
// writes in a few milliseconds, so that spans waiting for room in a full
// queue (fullWait) find it after one such write.
const writeAt = 512 << 10

// pressureAt is how many queued spans and records being written cut
// short a background write's wait for a busy store (see backgroundFlush).
func (e *Exporter) pressureAt() int { return max(min(e.maxQueue/2, pressureSpans), 1) }

func (e *Exporter) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// request hands the loop a ForceFlush or Shutdown and waits for its
// reply, or for ctx.
func (e *Exporter) request(ctx context.Context, shutdown bool) error {
	req := &request{ctx: ctx, shutdown: shutdown, reply: make(chan error, 1)}
	e.mu.Lock()
	if e.closed.Load() {
		e.mu.Unlock()
		return nil
	}
	if shutdown {
		e.closed.Store(true)
	}
	e.requests = append(e.requests, req)
	e.mu.Unlock()
	if shutdown {
		close(e.stop)
	}
	e.signal()
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop is the one goroutine that owns the Recorder's writes. The first
// span queued after it took the queue arms writeInterval; then, or at
// once when wakeAt spans are queued or a request comes, it takes every
// span queued, routes them through the retention rules in the order they
// ended (a session not kept holds them), and writes what the session
// keeps: every writeInterval, every writeAt bytes, and for each request.
func (e *Exporter) loop() {
	defer close(e.done)
	if e.releaseDir != nil {
		defer e.releaseDir()
	}
	// Background writes wait for a busy store until Shutdown, no longer:
	// then the store spools them, and Shutdown's own write follows.
	life, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-life.Done():
		}
	}()
	timer := time.NewTimer(writeInterval)
	timer.Stop()
	armed := false
	arm := func(d time.Duration) {
		timer.Reset(d)
		armed = true
	}
	for {
		due := false
		select {
		case <-e.wake:
		case <-timer.C:
			armed, due = false, true
		}
		e.mu.Lock()
		reqs := e.requests
		e.requests = nil
		e.mu.Unlock()
		if len(reqs) == 0 && !due && e.queue.n.Load() < int64(e.wakeAt()) {
			// The first span since the last take, or a label: written
			// within writeInterval, with what follows.
			if !armed {
				arm(writeInterval)
			}
			continue
		}
		e.drain(life)
		e.letGo.handOver(e.rec)
		// Under KeepByTrace, traces whose grace has passed are dropped;
		// while some wait the loop comes back within writeInterval.
		waiting := e.rec.DecideTraces()
		for _, req := range reqs {
			if req.shutdown {
				req.reply <- e.close(req.ctx)
				return
			}
			err := e.rec.Flush(req.ctx)
			e.handle(err)
			req.reply <- err
		}
		// After a failed write, the next waits for retryInterval
		// (writeDue).
		if due || e.writeDue() {
			if err := e.backgroundFlush(life); err != nil {
				arm(retryInterval)
				continue
			}
		}
		if !armed && (e.queue.n.Load() > 0 || e.pendingBytes() > 0 || waiting) {
			arm(writeInterval)
		}
	}
}

// drain takes every queued span and routes them, in the order they
// ended, giving back their places in the queue as it goes; it writes
// every writeAt bytes, so that a full queue makes room while it writes.
func (e *Exporter) drain(life context.Context) {
	if e.queue.take(&e.taken) == 0 {
		return
	}
	select {
	case <-e.press: // the spans it was about are taken
	default:
	}
	n := 0
	merged(&e.taken, func(b *queueBatch, i int) {
		e.route(b, i)
		if n++; n < 256 {
			return
		}
		e.routed(n)
		n = 0
		if e.writeDue() {
			// A long take makes many records: write them, or spool them
			// if the store is busy, rather than hold them all.
			e.backgroundFlush(life)
		}
	})
	e.routed(n)
	empty(&e.taken)
}

// backgroundFlush writes what the Recorder has queued, waiting for a busy
// store at most busyWait, not past the exporter's life, and not once
// spans pile up behind it: as many as make the loop take them (wakeAt),
// or as make pressureAt with the records it writes. Then, as at the end
// of the wait, the store spools the records, and the loop takes the spans.
func (e *Exporter) backgroundFlush(life context.Context) error {
	pending, _ := e.rec.Pending()
	if pending == 0 && !e.rec.TallyDue() {
		return nil // no write, and no goroutine to watch it
	}
	ctx, cancel := context.WithTimeout(life, busyWait)
	defer cancel()
	// The loop takes wakeAt spans at once when it is free; and what waits
	// in memory is the write's records and the spans queued behind it.
	at := int64(max(min(e.pressureAt()-pending, e.wakeAt()), 1))
	e.pressAt.Store(at)
	defer e.pressAt.Store(int64(e.pressureAt()))
	select {
	case <-e.press: // left by an earlier write, about spans since taken
	default:
	}
	if e.queue.n.Load() >= at {
		cancel() // spans already wait: a busy store spools at once
	}
	go func() {
		select {
		case <-e.press:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := e.rec.Flush(ctx)
	e.handle(err)
	return err
}

// writeDue reports whether the records the Recorder has queued are to be
// written before writeInterval: writeAt bytes of them — unless the last
// write failed, when the loop waits retryInterval before writing again,
// but not once they reach recorder.SpillBytes: a write then spools or
// sheds them (Recorder.Flush), so that a failing store bounds memory as a
// busy one does.
func (e *Exporter) writeDue() bool {
	if e.failing {
		return e.rec.Full()
	}
	return e.pendingBytes() >= writeAt
}

// pendingBytes is how many bytes of records the Recorder has queued.
func (e *Exporter) pendingBytes() int {
	_, b := e.rec.Pending()
	return b
}

// route hands the Recorder the record of the span at i in b, and the
// forwarder the span.
func (e *Exporter) route(b *queueBatch, i int) {
	q := &b.recs[i]
	var t recorder.Trace // the zero Trace under KeepBySession
	if b.traces != nil {
		t = recorder.Trace(b.traces[i])
	}
	var err error
	switch q.what {
	case spanRecord:
		err = e.rec.RecordEncodedIn(t, q.kind, q.effect, q.stamp, b.bytes[q.start:q.end], q.hint)
	case spanTooLarge:
		tl := b.tooLarge[q.start]
		err = e.rec.RecordTooLargeIn(t, q.kind, q.effect, tl.name, tl.err)
	}
	if q.root {
		e.rec.EndTrace(t)
	}
	if err != nil && !errors.Is(err, sessions.ErrClosed) {
		e.problems.Add(1)
		class := "record"
		if errors.Is(err, recorder.ErrTooLarge) {
			class = "too large" // its own report: it says what was dropped
		}
		e.reported.Once(class, err)
	}
	if b.spans != nil {
		// The marks policy is about what the store keeps: a forwarded
		// session sends every span, as a trace backend expects.
		e.fwd.Add(b.spans[i], e.rec.Level())
	}
}

// close is Shutdown's work, in the loop: every span queued before it has
// been routed, so the Recorder writes what remains (a store another
// process holds spools it at once) and closes the store; the forwarder
// sends what it has queued.
func (e *Exporter) close(ctx context.Context) error {
	// Waiting for a store another process holds is bounded even when ctx
	// is not (DefaultShutdownWait); past it the store spools the records.
	// Writing to a free store, and closing it, take what they take: ctx
	// bounds them only if the caller bounded it.
	busyCtx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		busyCtx, cancel = context.WithTimeout(ctx, DefaultShutdownWait)
		defer cancel()
	}
	// A failed write is tried again by Close, which spools what it still
	// cannot write: Close says what was lost, if anything.
	e.letGo.handOver(e.rec)
	_ = e.rec.Flush(busyCtx)
	err := errors.Join(e.rec.Close(ctx), e.fwd.Shutdown(ctx))
	e.reportSpooled()
	return err
}
