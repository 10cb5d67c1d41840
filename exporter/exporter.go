package exporter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/write/forward"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Exporter is a span processor (sdktrace.SpanProcessor) that records the
// spans of one session into a store. Create it with New.
type Exporter struct {
	rec      *recorder.Recorder
	fwd      *forward.Forwarder // WithForward's; nil without it
	dir      string
	labelSet atomic.Bool // a label came from an option, the environment or Label

	stamps   stampTable
	inflight atomic.Int64 // stamped spans not yet ended
	marks    Marks

	registration registration // where Register put the exporter (register.go)

	queue    spanQueue
	maxQueue int

	mu       sync.Mutex  // guards requests
	requests []*request  // ForceFlush and Shutdown calls waiting for the loop
	closed   atomic.Bool // Shutdown has queued its request: nothing more is taken

	wake      chan struct{}                 // the queue went from empty to not, or is full enough to take; a request; a label
	press     chan struct{}                 // the queue holds pressAt spans or more: stop waiting for a busy store
	stop      chan struct{}                 // closed by Shutdown: background writes stop waiting
	done      chan struct{}                 // closed by the loop when it has ended
	room      atomic.Pointer[chan struct{}] // closed, and replaced, when the loop routes spans while some wait
	waiting   atomic.Int32                  // spans waiting for room (waitRoom)
	pressAt   atomic.Int64                  // queued spans that press a background write (see backgroundFlush)
	saturated atomic.Bool                   // a wait for room ended without it: drop until the queue drains to half

	resourceOnce sync.Once
	resourceSet  atomic.Bool // resourceOnce has run

	stopOnce sync.Once
	stopped  atomic.Bool
	dropped  atomic.Int64
	cut      atomic.Int64 // spans whose attributes the SDK's limit dropped
	problems atomic.Int64
	reported sync.Map // problem class -> struct{}: each reported once

	metricErr error // set while registering metrics, in New

	// owned by the loop goroutine
	failing bool                    // the last write failed; report again only after a success
	taken   [queueShards]queueBatch // what the loop took from the queue, or the empty batches it swaps in
}

// request is a ForceFlush or Shutdown waiting for the loop: the loop takes
// every span queued before it, writes, within ctx, and replies.
type request struct {
	ctx      context.Context
	shutdown bool
	reply    chan error // buffered: the loop never waits for the caller
}

var _ sdktrace.SpanProcessor = (*Exporter)(nil)

// New returns a span processor recording into the Badger store in dir. An
// empty dir means the default store: $OTELRECORDS_DIR, else
// badgerstore.DefaultDir() (under os.UserCacheDir()). Nothing is opened or
// created until the session is kept.
//
// The environment configures what the options leave unset:
// OTELRECORDS_LEVEL (off, basic, full), OTELRECORDS_KEEP_SESSIONS,
// OTELRECORDS_PENDING_BUDGET (bytes), OTELRECORDS_LABEL, OTELRECORDS_MARKS
// (all, enclosing, none) and OTELRECORDS_MAX_BYTES. A value that does not
// parse is reported through otel.Handle and ignored.
func New(dir string, opts ...Option) (*Exporter, error) {
	c := config{maxQueue: DefaultMaxQueueSize}
	for _, o := range opts {
		o(&c)
	}
	c.fromEnv(otel.Handle)

	e := &Exporter{
		marks:    DefaultMarks,
		maxQueue: c.maxQueue,
		wake:     make(chan struct{}, 1),
		press:    make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	room := make(chan struct{})
	e.room.Store(&room)
	e.pressAt.Store(int64(e.pressureAt()))
	open := func() (sessions.Store, error) { return c.store, nil }
	if c.store == nil {
		if dir == "" {
			d, err := badgerstore.DefaultDir()
			if err != nil {
				return nil, fmt.Errorf("otelrecords: no store directory given and no default: %w", err)
			}
			dir = d
		}
		e.dir = dir
		// The shared writer opens the directory only while it writes, so
		// other processes (another build, the records command) get their
		// turn; it touches nothing until the first write.
		open = func() (sessions.Store, error) {
			return sharedstore.New(dir, otel.Handle), nil
		}
	}
	cfg := recorder.Config{Level: DefaultLevel}
	if c.level != nil {
		cfg.Level = *c.level
	}
	if c.keepSessions != nil {
		cfg.KeepSessions = *c.keepSessions
	}
	if c.budget != nil {
		cfg.PendingBudget = *c.budget
	}
	if c.label != nil {
		cfg.Label = *c.label
		e.labelSet.Store(true)
	}
	if c.marks != nil {
		e.marks = *c.marks
	}
	if c.maxBytes != nil {
		cfg.MaxBytes = *c.maxBytes
	}
	cfg.Report = e.reportOnce
	if c.now == nil {
		c.now = clock.Real{}.Now
	}
	e.fwd = forward.New(c.forward, forward.Config{
		Budget:   budgetBytes(cfg.PendingBudget),
		MaxQueue: e.maxQueue,
		Batch:    DefaultForwardBatch,
		Timeout:  DefaultForwardTimeout,
	})
	cfg.OnKeep = e.fwd.Keep
	// Two exporters of this process never give two sessions one id, even
	// when their first spans start at the same instant.
	cfg.IDs = &recorder.ProcessIDs
	e.rec = recorder.New(cfg, open, c.now)
	if c.meters != nil {
		if err := e.registerMetrics(c.meters); err != nil {
			return nil, fmt.Errorf("otelrecords: register metrics: %w", err)
		}
	}
	go e.loop()
	return e, nil
}

// Dir returns the store directory, or "" when the exporter writes through a
// store given with WithStore.
func (e *Exporter) Dir() string { return e.dir }

// Level returns the level in force.
func (e *Exporter) Level() sessions.Level { return e.rec.Level() }

// SetLevel changes the level. It does not end the session in progress.
// After Register, level off takes the exporter off its provider and
// another level puts it back.
func (e *Exporter) SetLevel(l sessions.Level) {
	e.rec.SetLevel(l)
	e.levelChanged()
}

// Label names what the process is doing, for the session in progress: on a
// kept session its row is rewritten at once (at the next write), otherwise
// the label is written when the session is kept.
func (e *Exporter) Label(label string) {
	e.labelSet.Store(true)
	e.rec.Label(label)
	e.signal()
}

// OnStart stamps the span: its session (started at this span's start time
// if this is its first stamp), its seq and its offset from the session's
// start, and notes how many attributes it starts with (its inputs). Under
// MarksEnclosing, a record (a span with records.kind or records.effect)
// also marks the open spans it started in as enclosing a record. At level
// off it does nothing.
func (e *Exporter) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	// The level first: at level off nothing else may cost anything, and
	// StartTime takes the span's lock.
	if e.stopped.Load() || e.rec.Level() == sessions.LevelOff {
		return
	}
	st, ok := e.rec.Stamp(s.StartTime())
	if !ok {
		return
	}
	k, o := keyOf(s), openSpan{stamp: st, inputs: spanbridge.InputCount(s)}
	if e.marks == MarksEnclosing {
		e.enclose(s, k, &o)
	}
	e.inflight.Add(1)
	e.stamps.put(k, o)
}

// OnEnd maps the ended span to its record and encodes it, here, on the
// goroutine that ended it (CPU, not disk, and in parallel across
// goroutines), then queues the record's bytes for the background goroutine,
// which routes them through the retention rules and writes. It never
// waits on disk: when the queue is full (WithMaxQueueSize) it waits at
// most fullWait (20 ms) for the background goroutine to take spans, and
// otherwise drops the span and counts it; once such a wait ends without
// room it drops spans without waiting until the queue has drained to half.
func (e *Exporter) OnEnd(s sdktrace.ReadOnlySpan) {
	if e.inflight.Load() == 0 {
		return // level off, or a span started before the exporter
	}
	k := keyOf(s)
	o, ok := e.stamps.take(k)
	if !ok {
		return
	}
	e.inflight.Add(-1)
	if e.closed.Load() || isStoreSpan(s) {
		return
	}
	if !e.resourceSet.Load() {
		e.resourceOnce.Do(func() { e.useResource(s) })
	}
	record, forward := e.recorded(s, o.encloses), e.fwd != nil
	if !record && !forward {
		return // an implicit mark the policy lets go
	}
	if !e.reserve() {
		e.dropped.Add(1)
		// Format the report only the first time: a full queue drops spans
		// by the thousand, each on the caller's span call.
		if _, seen := e.reported.Load("queue"); !seen {
			e.reportOnce("queue", fmt.Errorf("otelrecords: span queue full (%d spans); dropping spans until it drains (see Stats().Dropped)", e.maxQueue))
		}
		return
	}
	if !e.enqueue(s, k, o, record, forward) {
		e.routed(1) // its place goes back: nothing was queued
	}
}

// useResource sets the session's resource, and its label if no option
// gave one, from the first span's Resource: every span of a provider has
// the same.
func (e *Exporter) useResource(s sdktrace.ReadOnlySpan) {
	res := s.Resource()
	e.rec.SetResource(spanbridge.Attrs(res.Attributes()))
	if v, ok := res.Set().Value(spanbridge.SessionLabelKey); ok && !e.labelSet.Load() {
		e.rec.Label(v.Emit())
	}
	e.resourceSet.Store(true)
}

// pressureAt is how many queued spans and records being written cut
// short a background write's wait for a busy store (see backgroundFlush).
func (e *Exporter) pressureAt() int { return max(min(e.maxQueue/2, pressureSpans), 1) }

func (e *Exporter) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// ForceFlush returns once every record of every span ended before the call
// is durable in the store (written, or — when another process holds the
// store until ctx ends — in its spool), or held in memory for a session
// not yet kept. The background goroutine answers it after one take of
// the whole queue, which holds every span ended before the call: a steady
// stream of spans after it cannot starve it. It returns the error of the
// write, if it failed, or ctx's error if ctx ends first. After Shutdown
// it returns nil.
func (e *Exporter) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.request(ctx, false); err != nil {
		return err
	}
	return e.fwd.Flush(ctx)
}

// Shutdown writes every ended span's record, closes the store and stops
// the background goroutine. A store another process holds is not waited
// for: the records it does not take at once go to its spool, which the
// next opener merges, so ctx has only to cover routing the spans still
// queued (their records are encoded already) and writing them out. Closing the
// store waits at most until ctx ends (DefaultShutdownWait when ctx has no
// deadline). If ctx ends first Shutdown returns ctx's error and the
// goroutine finishes the work on its own. Calls after the first return
// nil; spans ending after it are ignored.
func (e *Exporter) Shutdown(ctx context.Context) error {
	first := false
	e.stopOnce.Do(func() { first = true })
	if !first {
		return nil
	}
	e.stopped.Store(true)
	if err := e.request(ctx, true); err != nil {
		return err
	}
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// budgetBytes turns the recorder's PendingBudget convention (0 for the
// default, negative for nothing) into a byte count.
func budgetBytes(b int) int {
	switch {
	case b == 0:
		return recorder.DefaultPendingBudget
	case b < 0:
		return 0
	}
	return b
}

// DefaultShutdownWait bounds how long Shutdown waits for the store to
// close when its context has no deadline.
const DefaultShutdownWait = 5 * time.Second

// busyWait bounds how long a background write waits for a store another
// process holds before the store spools the records, so that records do
// not pile up in memory behind a store that stays busy.
const busyWait = 10 * time.Second

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

// loop is the one goroutine that owns the Recorder's writes. The first
// span queued after it took the queue arms writeInterval; then, or at
// once when wakeAt spans are queued or a request comes, it takes every
// span queued, routes them through the retention rules in the order they
// ended (a session not kept holds them), and writes what the session
// keeps: every writeInterval, every writeAt bytes, and for each request.
func (e *Exporter) loop() {
	defer close(e.done)
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
		for _, req := range reqs {
			if req.shutdown {
				req.reply <- e.close(req.ctx)
				return
			}
			err := e.rec.Flush(req.ctx)
			e.handle(err)
			req.reply <- err
		}
		// After a failed write, the next waits for retryInterval.
		if due || (!e.failing && e.pendingBytes() >= writeAt) {
			if err := e.backgroundFlush(life); err != nil {
				arm(retryInterval)
				continue
			}
		}
		if !armed && (e.queue.n.Load() > 0 || e.pendingBytes() > 0) {
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
		if !e.failing && e.pendingBytes() >= writeAt {
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
	if pending == 0 {
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

// pendingBytes is how many bytes of records the Recorder has queued.
func (e *Exporter) pendingBytes() int {
	_, b := e.rec.Pending()
	return b
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
	_ = e.rec.Flush(busyCtx)
	err := errors.Join(e.rec.Close(ctx), e.fwd.Shutdown(ctx))
	e.reportSpooled()
	return err
}

// handle reports a write error that no caller is waiting for, once per
// failing streak, and — once — that a store stayed busy so long that
// records went to its spool. Waiting for a store another process holds is
// normal operation and reported by nobody (it is counted in
// Stats.BusyWaits).
func (e *Exporter) handle(err error) {
	e.reportSpooled()
	if err == nil {
		e.failing = false
		return
	}
	if !e.failing {
		e.failing = true
		otel.Handle(fmt.Errorf("otelrecords: writing records: %w (records stay queued and are retried)", err))
	}
}

// reportSpooled reports, once, that records went to the store's spool.
func (e *Exporter) reportSpooled() {
	if _, seen := e.reported.Load("spooled"); seen {
		return
	}
	if n := e.rec.Stats().Spooled; n > 0 {
		e.reportOnce("spooled", fmt.Errorf("otelrecords: another process held the store %s (for over %v, while %d spans queued, or at Shutdown); %d records were set aside in its spool, which the next process to open it writes (see Stats().Spooled)", e.dir, busyWait, e.pressureAt(), n))
	}
}

// route hands the Recorder the record of the span at i in b, and the
// forwarder the span.
func (e *Exporter) route(b *queueBatch, i int) {
	q := &b.recs[i]
	var err error
	switch q.what {
	case spanRecord:
		err = e.rec.RecordEncoded(q.kind, q.effect, q.stamp, b.bytes[q.start:q.end])
	case spanTooLarge:
		tl := b.tooLarge[q.start]
		err = e.rec.RecordTooLarge(q.kind, q.effect, tl.name, tl.err)
	}
	if err != nil && !errors.Is(err, sessions.ErrClosed) {
		e.problems.Add(1)
		class := "record"
		if errors.Is(err, recorder.ErrTooLarge) {
			class = "too large" // its own report: it says what was dropped
		}
		e.reportOnce(class, err)
	}
	if b.spans != nil {
		// The marks policy is about what the store keeps: a forwarded
		// session sends every span, as a trace backend expects.
		e.fwd.Add(b.spans[i], e.rec.Level())
	}
}

// isStoreSpan reports whether a span comes from Badger itself, which
// traces its compactions and value-log GC on the global TracerProvider
// with an unnamed tracer (the SDK names it sdkTracerName). Recording them
// would record our own writes, and each record written can cause more
// compaction.
func isStoreSpan(s sdktrace.ReadOnlySpan) bool {
	scope := s.InstrumentationScope().Name
	return (scope == "" || scope == sdkTracerName) && strings.HasPrefix(s.Name(), "Badger.")
}

// sdkTracerName is the name the SDK gives a tracer asked for without one.
const sdkTracerName = "go.opentelemetry.io/otel/sdk/tracer"

func problemClass(err error) string {
	if errors.Is(err, sessions.ErrInvalidKind) {
		return "kind"
	}
	if errors.Is(err, spanbridge.ErrAttributesDropped) {
		return "dropped"
	}
	return "effect"
}

// reportOnce hands err to otel.Handle the first time a problem of its class
// occurs; later ones are only counted, so a hot loop with a bad attribute
// does not flood the host's logs.
func (e *Exporter) reportOnce(class string, err error) {
	if _, seen := e.reported.LoadOrStore(class, struct{}{}); !seen {
		otel.Handle(fmt.Errorf("%w (reported once; later ones are counted in Stats)", err))
	}
}

// Stats counts what the exporter did, so a user can tell when records are
// dropped and why.
type Stats struct {
	// Written is how many records (not session rows) the store acknowledged.
	Written int64
	// Held is how many records are held in memory now, waiting for a change.
	Held int64
	// HeldBytes is how many bytes the held records count against the budget.
	HeldBytes int64
	// Evicted is how many held records the pending budget pushed out.
	Evicted int64
	// Invalid is how many records were refused for an invalid kind.
	Invalid int64
	// TooLarge is how many records were dropped because no store could
	// hold them (over 15 MiB encoded, or beyond what a reader decodes).
	TooLarge int64
	// WriteErrors is how many times opening or writing the store failed.
	WriteErrors int64
	// SessionsKept is 1 once the session is kept, else 0.
	SessionsKept int64
	// StoreOpens is how many times the store was opened.
	StoreOpens int64
	// BusyWaits is how many writes found the store held by another process
	// (a build, the records command) and waited for their turn: normal
	// operation, not an error, and not reported.
	BusyWaits int64
	// Pending is how many records wait to be written on the next Flush.
	Pending int64
	// Spooled is how many records were set aside in the store's spool
	// because another process held the store (past a write's wait, past
	// the memory bound, or at Shutdown); the next opener writes them.
	Spooled int64
	// TrimmedSessions is how many other sessions were deleted to keep the
	// store within WithMaxBytes.
	TrimmedSessions int64
	// TrimmedRecords is how many of this session's own oldest records were
	// deleted to keep the store within WithMaxBytes.
	TrimmedRecords int64
	// StoreBytes is the store's size as WithMaxBytes counts it, after the
	// last write; 0 without WithMaxBytes or before the session is kept.
	StoreBytes int64
	// Dropped is how many ended spans were dropped because the queue was
	// full.
	Dropped int64
	// Problems is how many spans had invalid control attributes (recorded
	// anyway, as documented), may have lost records.effect to the
	// attribute limit (spanbridge.ErrAttributesDropped), or failed to
	// record.
	Problems int64
	// Queued is how many ended spans wait for the background goroutine.
	Queued int64
	// AttributesDropped is how many spans had attributes dropped by the
	// SDK's attribute limit (128 by default) before they reached us: their
	// records hold what was left (and say how many went).
	AttributesDropped int64
}

// Stats returns the exporter's counters.
func (e *Exporter) Stats() Stats {
	q := max(e.queue.n.Load(), 0)
	r := e.rec.Stats()
	return Stats{
		Written: r.Written, Held: r.Held, HeldBytes: r.HeldBytes, Evicted: r.Evicted,
		Invalid: r.Invalid, TooLarge: r.TooLarge, WriteErrors: r.WriteErrors,
		SessionsKept: r.SessionsKept, StoreOpens: r.StoreOpens, BusyWaits: r.BusyWaits, Pending: r.Pending,
		Spooled: r.Spooled, StoreBytes: r.StoreBytes,
		TrimmedSessions: r.TrimmedSessions, TrimmedRecords: r.TrimmedRecords,
		Dropped: e.dropped.Load(), Problems: e.problems.Load(), Queued: q,
		AttributesDropped: e.cut.Load(),
	}
}
