package exporter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/clock"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Exporter is a span processor (sdktrace.SpanProcessor) that records the
// spans of one session into a store. Create it with New.
type Exporter struct {
	rec      *sessions.Recorder
	dir      string
	labelSet atomic.Bool // a label came from an option, the environment or Label

	stamps   stampTable
	inflight atomic.Int64 // stamped spans not yet ended

	mu       sync.Mutex // guards queue and closed
	queue    []ended
	closed   bool // the loop has taken its last batch
	maxQueue int

	wake     chan struct{}
	requests chan chan error // a flush request, answered with its error
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	shutErr  error

	stopped  atomic.Bool
	dropped  atomic.Int64
	problems atomic.Int64
	reported sync.Map // problem class -> struct{}: each reported once

	metricErr error // set while registering metrics, in New

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
		requests: make(chan chan error),
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
		open = func() (sessions.Store, error) {
			return badgerstore.Open(dir, badgerstore.WithErrorHandler(otel.Handle))
		}
	}
	cfg := sessions.Config{Level: DefaultLevel}
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
	e.rec = sessions.NewRecorder(cfg, open, c.now)
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
	if e.stopped.Load() {
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
			e.reportOnce("queue", fmt.Errorf("otelrecords: span queue full (%d spans); dropping spans until it drains (see Stats().Dropped)", e.maxQueue))
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
	reply := make(chan error, 1)
	select {
	case e.requests <- reply:
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown flushes every ended span's record, closes the store and stops
// the background goroutine. If ctx ends first it returns ctx's error and
// the goroutine finishes the work on its own. Calls after the first return
// nil; spans ending after it are ignored.
func (e *Exporter) Shutdown(ctx context.Context) error {
	first := false
	e.stopOnce.Do(func() {
		first = true
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
	for {
		select {
		case <-e.wake:
			e.handle(e.drain(false))
		case reply := <-e.requests:
			reply <- e.drain(false)
		case <-e.stop:
			err := e.drain(true)
			e.shutErr = errors.Join(err, e.rec.Close())
			return
		}
	}
}

// drain processes every queued span, then writes. last marks the final
// drain: spans ending after it are ignored.
func (e *Exporter) drain(last bool) error {
	var batch []ended
	for {
		e.mu.Lock()
		batch, e.queue = e.queue, batch[:0]
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
		}
	}
	e.mu.Lock()
	// A burst can leave a large backing array behind; a quiet program
	// should not keep it.
	if cap(e.queue) > 1024 && len(e.queue) == 0 {
		e.queue = nil
	}
	e.mu.Unlock()
	return e.rec.Flush()
}

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
		e.reportOnce("record", err)
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
	sessions.Stats
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
	return Stats{Stats: e.rec.Stats(), Dropped: e.dropped.Load(), Problems: e.problems.Load(), Queued: int64(q)}
}
