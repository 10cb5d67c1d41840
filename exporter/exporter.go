package exporter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/clock"
	"github.com/otelrecords/otelrecords/internal/recorder"
	"github.com/otelrecords/otelrecords/internal/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Exporter is a span processor (sdktrace.SpanProcessor) that records the
// spans of one session into a store. Create it with New.
type Exporter struct {
	rec      *recorder.Recorder
	dir      string
	labelSet atomic.Bool // a label came from an option, the environment or Label

	stamps   stampTable
	inflight atomic.Int64 // stamped spans not yet ended

	mu       sync.Mutex // guards queue and closed
	queue    []ended
	spare    []ended // a drained array, reused by the next swap
	closed   bool    // the loop has taken its last batch
	maxQueue int

	wake     chan struct{}
	requests chan flushRequest
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	shutCtx  context.Context // Shutdown's, for the loop's last flush
	shutErr  error

	stopped  atomic.Bool
	dropped  atomic.Int64
	problems atomic.Int64
	reported sync.Map // problem class -> struct{}: each reported once

	metricErr error // set while registering metrics, in New

	fwd *forwarder // WithForward's; nil without it

	// owned by the loop goroutine
	resourceSet bool
	failing     bool // the last write failed; report again only after a success
}

type ended struct {
	span  sdktrace.ReadOnlySpan
	stamp sessions.Stamp
}

var _ sdktrace.SpanProcessor = (*Exporter)(nil)

// New returns a span processor recording into the Badger store in dir. An
// empty dir means the default store: $OTELRECORDS_DIR, else
// badgerstore.DefaultDir() (under os.UserCacheDir()). Nothing is opened or
// created until the session is kept.
//
// The environment configures what the options leave unset:
// OTELRECORDS_LEVEL (off, basic, full), OTELRECORDS_KEEP_SESSIONS,
// OTELRECORDS_PENDING_BUDGET (bytes) and OTELRECORDS_LABEL. A value that
// does not parse is reported through otel.Handle and ignored.
func New(dir string, opts ...Option) (*Exporter, error) {
	c := config{maxQueue: DefaultMaxQueueSize}
	for _, o := range opts {
		o(&c)
	}
	c.fromEnv(otel.Handle)

	e := &Exporter{
		maxQueue: c.maxQueue,
		wake:     make(chan struct{}, 1),
		requests: make(chan flushRequest),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
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
		// A Shared store opens the directory only while it writes, so
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
	if c.now == nil {
		c.now = clock.Real{}.Now
	}
	e.rec = recorder.New(cfg, open, c.now)
	if c.meters != nil {
		if err := e.registerMetrics(c.meters); err != nil {
			return nil, fmt.Errorf("otelrecords: register metrics: %w", err)
		}
	}
	e.fwd = newForwarder(c.forward, cfg.PendingBudget, e.maxQueue)
	go e.loop()
	return e, nil
}

// Dir returns the store directory, or "" when the exporter writes through a
// store given with WithStore.
func (e *Exporter) Dir() string { return e.dir }

// Level returns the level in force.
func (e *Exporter) Level() sessions.Level { return e.rec.Level() }

// SetLevel changes the level. It does not end the session in progress.
func (e *Exporter) SetLevel(l sessions.Level) { e.rec.SetLevel(l) }

// Label names what the process is doing, for the session in progress: on a
// kept session its row is rewritten at once (at the next write), otherwise
// the label is written when the session is kept.
func (e *Exporter) Label(label string) {
	e.labelSet.Store(true)
	e.rec.Label(label)
	e.signal()
}

// OnStart stamps the span: its session (started now if this is its first
// stamp), its seq and its offset. At level off it does nothing.
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
	e.inflight.Add(1)
	e.stamps.put(keyOf(s), st)
}

// OnEnd queues the ended span for the background goroutine, which maps it
// to a record and routes it through the retention rules. It never blocks
// on disk: when the queue is full the span is dropped and counted.
func (e *Exporter) OnEnd(s sdktrace.ReadOnlySpan) {
	if e.inflight.Load() == 0 {
		return // level off, or a span started before the exporter
	}
	st, ok := e.stamps.take(keyOf(s))
	if !ok {
		return
	}
	e.inflight.Add(-1)
	e.mu.Lock()
	if e.closed || len(e.queue) >= e.maxQueue {
		closed := e.closed
		e.mu.Unlock()
		if !closed {
			e.dropped.Add(1)
			// Format the report only the first time: a full queue drops
			// spans by the thousand, each on the caller's span call.
			if _, seen := e.reported.Load("queue"); !seen {
				e.reportOnce("queue", fmt.Errorf("otelrecords: span queue full (%d spans); dropping spans until it drains (see Stats().Dropped)", e.maxQueue))
			}
		}
		return
	}
	first := len(e.queue) == 0
	e.queue = append(e.queue, ended{s, st})
	e.mu.Unlock()
	if first {
		e.signal()
	}
}

func (e *Exporter) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// ForceFlush returns once every record of every span ended before the call
// is durable in the store, or held in memory for a session not yet kept.
// It returns the error of the last write, if it failed, or ctx's error if
// ctx ends first. After Shutdown it returns nil.
func (e *Exporter) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := flushRequest{ctx: ctx, reply: make(chan error, 1)}
	select {
	case e.requests <- req:
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.reply:
		return errors.Join(err, e.fwd.flush(ctx))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushRequest asks the loop to write everything ended so far, retrying a
// busy store until ctx ends.
type flushRequest struct {
	ctx   context.Context
	reply chan error
}

// Shutdown flushes every ended span's record, closes the store and stops
// the background goroutine. If ctx ends first it returns ctx's error and
// the goroutine finishes the work on its own. Calls after the first return
// nil; spans ending after it are ignored.
func (e *Exporter) Shutdown(ctx context.Context) error {
	first := false
	e.stopOnce.Do(func() {
		first = true
		e.shutCtx = ctx
		e.stopped.Store(true)
		close(e.stop)
	})
	if !first {
		return nil
	}
	select {
	case <-e.done:
		return e.shutErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop is the background goroutine: it maps ended spans, routes them
// through the retention rules, and writes in batches.
func (e *Exporter) loop() {
	defer close(e.done)
	var retry <-chan time.Time // set while a write failed
	backoff := minRetry
	for {
		select {
		case <-e.wake:
		case <-retry:
		case req := <-e.requests:
			err := e.flushUntil(req.ctx)
			req.reply <- err
			retry, backoff = e.retryAfter(err, backoff)
			continue
		case <-e.stop:
			ctx, cancel := shutdownContext(e.shutCtx)
			err := e.flushUntil(ctx)
			cancel()
			if derr := e.drain(true); err == nil {
				err = derr // what ended during the last flush
			}
			// Close flushes once more, and sets aside in the store's spool
			// what the store, still busy, would not take.
			e.shutErr = errors.Join(e.rec.Close(), ignoreLocked(err), e.fwd.shutdown(e.shutCtx))
			return
		}
		err := e.drain(false)
		e.handle(err)
		retry, backoff = e.retryAfter(err, backoff)
	}
}

// Retries of a failed write start at minRetry and back off, jittered, to
// maxRetry: a store held by another process is retried about ten times a
// second, while records wait in memory.
const (
	minRetry     = 10 * time.Millisecond
	maxRetry     = 200 * time.Millisecond
	maxFailRetry = 5 * time.Second
)

// DefaultShutdownWait bounds how long Shutdown waits for a busy store when
// its context has no deadline; past it, unwritten records go to the
// store's spool.
const DefaultShutdownWait = 5 * time.Second

// shutdownContext bounds the last flush: a fifth of what is left of the
// caller's deadline (at most spoolMargin) is kept back, so that spooling
// what the store would not take is done before Shutdown's caller stops
// waiting — and, likely, the process exits.
func shutdownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithTimeout(ctx, DefaultShutdownWait)
	}
	margin := min(time.Until(deadline)/5, spoolMargin)
	return context.WithDeadline(ctx, deadline.Add(-margin))
}

// spoolMargin is the most of Shutdown's deadline kept back for spooling.
const spoolMargin = 250 * time.Millisecond

// ignoreLocked drops a busy-store error: Close has spooled what it could
// not write, so nothing was lost.
func ignoreLocked(err error) error {
	if errors.Is(err, badgerstore.ErrLocked) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// retryAfter schedules the next attempt after a failed write, or clears it.
// A busy store is retried often; other failures (a full disk) back off
// further, to maxFailRetry.
func (e *Exporter) retryAfter(err error, backoff time.Duration) (<-chan time.Time, time.Duration) {
	if err == nil {
		return nil, minRetry
	}
	limit := maxRetry
	if !errors.Is(err, badgerstore.ErrLocked) {
		limit = maxFailRetry
	}
	d := backoff/2 + rand.N(backoff/2+1)
	return time.After(d), min(backoff*2, limit)
}

// flushUntil drains the queue and writes, retrying with backoff while
// another process holds the store and ctx lasts. Other errors (a full
// disk, a path that is a file) return at once: the loop keeps retrying
// them in the background.
func (e *Exporter) flushUntil(ctx context.Context) error {
	backoff := minRetry
	for {
		err := e.drain(false)
		if err == nil {
			e.handle(nil)
			return nil
		}
		if !errors.Is(err, badgerstore.ErrLocked) {
			return err
		}
		d := backoff/2 + rand.N(backoff/2+1)
		backoff = min(backoff*2, maxRetry)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
	}
}

// drain maps and routes the spans queued now, then writes. Spans that end
// meanwhile wait for the next drain, so a ForceFlush under a steady stream
// of spans returns once what ended before it is written, and a flush
// request is never starved. last drains until the queue is empty and
// closes it: spans ending after that are ignored.
func (e *Exporter) drain(last bool) error {
	// A long batch is written in parts while the rest of it is mapped and
	// encoded, so the store's write and ours run side by side instead of
	// one after the other (BENCHMARKS.md, figure 4). At most one part is
	// in flight, and it has ended before drain returns.
	var writing chan error
	defer func() {
		if writing != nil {
			<-writing // its records, if it failed, are in the final Flush
		}
	}()
	for {
		e.mu.Lock()
		batch := e.queue
		e.queue, e.spare = e.spare[:0], nil
		if last && len(batch) == 0 {
			e.closed = true
		}
		e.mu.Unlock()
		if len(batch) == 0 {
			break
		}
		for i := range batch {
			e.process(batch[i])
			batch[i] = ended{}
			if i%writePart != writePart-1 || i == len(batch)-1 {
				continue
			}
			if writing != nil {
				select {
				case <-writing:
					writing = nil
				default: // the last part is still being written
				}
			}
			if writing == nil {
				writing = make(chan error, 1)
				go func(done chan<- error) { done <- e.rec.Flush() }(writing)
			}
		}
		e.mu.Lock()
		// Keep one small array for the next swap; a burst's large one goes,
		// so a quiet program holds no more than its budget.
		if cap(batch) <= maxSpare {
			e.spare = batch[:0]
		}
		more := len(e.queue) > 0
		e.mu.Unlock()
		if !last {
			if more {
				e.signal()
			}
			break
		}
	}
	if writing != nil {
		<-writing
		writing = nil
	}
	return e.rec.Flush()
}

// writePart is how many spans drain maps before it starts writing them
// while it maps the next ones: large enough that a write is worth a
// goroutine, small enough that the two overlap within one ForceFlush.
const writePart = 4096

// maxSpare is the largest queue array kept for reuse between drains.
const maxSpare = 1024

// handle reports a write error that no caller is waiting for, once per
// failing streak.
func (e *Exporter) handle(err error) {
	if err == nil {
		e.failing = false
		return
	}
	if !e.failing {
		e.failing = true
		otel.Handle(fmt.Errorf("otelrecords: writing records: %w (records stay queued and are retried)", err))
	}
}

func (e *Exporter) process(it ended) {
	defer func() {
		if p := recover(); p != nil {
			e.problems.Add(1)
			otel.Handle(fmt.Errorf("otelrecords: recording span %q failed: %v", it.span.Name(), p))
		}
	}()
	if isStoreSpan(it.span) {
		return
	}
	if !e.resourceSet {
		e.resourceSet = true
		res := it.span.Resource()
		e.rec.SetResource(spanbridge.Attrs(res.Attributes()))
		if v, ok := res.Set().Value(spanbridge.SessionLabelKey); ok && !e.labelSet.Load() {
			e.rec.Label(v.Emit())
		}
	}
	m := spanbridge.Map(it.span, max(e.rec.Level(), sessions.LevelBasic))
	if m.Problem != nil {
		e.problems.Add(1)
		e.reportOnce(problemClass(m.Problem), m.Problem)
	}
	if err := e.rec.Record(m.Kind, m.Effect, it.stamp, m.Record); err != nil && !errors.Is(err, sessions.ErrClosed) {
		e.problems.Add(1)
		class := "record"
		if errors.Is(err, recorder.ErrTooLarge) {
			class = "too large" // its own report: it says what was dropped
		}
		e.reportOnce(class, err)
	}
	e.forward(it.span)
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
	// Pending is how many records wait to be written on the next Flush.
	Pending int64
	// Spooled is how many records Close set aside in the store's spool
	// because the store stayed busy; the next opener writes them.
	Spooled int64
	// Dropped is how many ended spans were dropped because the queue was
	// full.
	Dropped int64
	// Problems is how many spans had invalid control attributes (recorded
	// anyway, as documented) or failed to record.
	Problems int64
	// Queued is how many ended spans wait for the background goroutine.
	Queued int64
}

// Stats returns the exporter's counters.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	q := len(e.queue)
	e.mu.Unlock()
	r := e.rec.Stats()
	return Stats{
		Written: r.Written, Held: r.Held, HeldBytes: r.HeldBytes, Evicted: r.Evicted,
		Invalid: r.Invalid, TooLarge: r.TooLarge, WriteErrors: r.WriteErrors,
		SessionsKept: r.SessionsKept, StoreOpens: r.StoreOpens, Pending: r.Pending,
		Spooled: r.Spooled,
		Dropped: e.dropped.Load(), Problems: e.problems.Load(), Queued: int64(q),
	}
}
