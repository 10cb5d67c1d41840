package exporter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/write/forward"
	"github.com/otelrecords/otelrecords/internal/write/intake"
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
	letGo    markTally // implicit marks let go, for the tally
	byTrace  bool      // KeepByTrace: records carry their trace, local roots end theirs

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
	saturated atomic.Bool                   // a wait for room ended without it: drop until the loop or the store makes progress
	stored    atomic.Int64                  // entries Badger has taken (badgerstore.WithWriteProgress): a write in progress

	resourceOnce sync.Once
	resourceSet  atomic.Bool // resourceOnce has run

	releaseDir func() // gives the directory back (intake.Claim), once the loop has ended

	stopOnce sync.Once
	stopped  atomic.Bool
	dropped  atomic.Int64
	cut      atomic.Int64 // spans whose attributes the SDK's limit dropped
	problems atomic.Int64
	reported intake.Reporter // each class of problem reported once

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
// badgerstore.DefaultDir() (under os.UserCacheDir()). The directory is
// the store: created (mode 0700) when the session is kept, and nothing is
// opened or created before; an existing directory is used only if it
// holds nothing but a store's own files. Where the store is, is settled
// once, here (badgerstore.Place: "~" expanded, links followed), and every
// write goes there: New fails, with an error saying how to fix it, for a
// directory holding other files (use a subdirectory of it), a path no
// store can be written in (a file, a socket, a read-only parent, a
// directory another user could replace), and a directory another
// exporter of this process records into and has not shut down.
//
// The environment configures what the options leave unset:
// OTELRECORDS_LEVEL (off, basic, full), OTELRECORDS_KEEP_SESSIONS,
// OTELRECORDS_PENDING_BUDGET (bytes), OTELRECORDS_LABEL, OTELRECORDS_MARKS
// (all, enclosing, none), OTELRECORDS_MAX_BYTES and OTELRECORDS_KEEP_BY
// (session, trace). A value that does not parse is reported through
// otel.Handle and ignored.
func New(dir string, opts ...Option) (*Exporter, error) {
	c := config{maxQueue: DefaultMaxQueueSize}
	for _, o := range opts {
		o(&c)
	}
	c.FromEnv(otel.Handle)

	e := &Exporter{
		maxQueue: c.maxQueue,
		wake:     make(chan struct{}, 1),
		press:    make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	room := make(chan struct{})
	e.room.Store(&room)
	e.pressAt.Store(int64(e.pressureAt()))
	open := func() (sessions.Store, error) { return c.Store, nil }
	if c.Store == nil {
		// Where the store is or will be, decided once (intake.Claim).
		placed, release, err := intake.Claim(dir)
		if err != nil {
			return nil, err
		}
		dir = placed
		e.releaseDir = release
		e.dir = dir
		// The shared writer opens the directory only while it writes, so
		// other processes (another build, the records command) get their
		// turn; it touches nothing until the first write.
		open = func() (sessions.Store, error) {
			return sharedstore.New(dir, otel.Handle, badgerstore.WithWriteProgress(e.storing)), nil
		}
	}
	cfg := c.Recorder()
	e.labelSet.Store(c.Label != nil)
	e.marks = c.MarksPolicy()
	e.byTrace = cfg.KeepBy == recorder.KeepByTrace
	cfg.Report = e.reported.Once
	if c.Now == nil {
		c.Now = clock.Real{}.Now
	} else {
		// A clock of the caller's: the same store on every run.
		cfg.ExactIDs = true
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
	e.rec = recorder.New(cfg, open, c.Now)
	if c.meters != nil {
		if err := e.registerMetrics(c.meters); err != nil {
			if e.releaseDir != nil {
				e.releaseDir() // no loop will: this exporter never runs
			}
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
// which routes them through the retention rules and writes. It does no
// I/O itself: when the queue is full (WithMaxQueueSize) it waits for the
// background goroutine to take spans while that goroutine or the store
// under it makes progress, and drops the span and counts it once neither
// has for fullWait (250 ms); once such a wait ends without room it drops
// spans without waiting until the loop or the store makes progress again.
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
	if !record && e.letGo.letGo(s, k, e.rec) { // counted for the session's tally
		e.signal() // for the loop to hand the counts over
	}
	// Under KeepByTrace a local root's end starts its trace's grace, even
	// when the root itself is let go — unless, under MarksEnclosing, no
	// record started inside it, when its trace holds nothing of it.
	root := e.byTrace && isLocalRoot(s) && (record || e.marks != MarksEnclosing || o.encloses)
	if !record && !forward && !root {
		return // an implicit mark the policy lets go
	}
	if !e.reserve() {
		e.dropped.Add(1)
		// Format the report only the first time: a full queue drops spans
		// by the thousand, each on the caller's span call.
		if !e.reported.Reported("queue") {
			e.reported.Once("queue", fmt.Errorf("otelrecords: span queue full (%d spans) and its writer made no progress for %v; dropping spans until it does (see Stats().Dropped)", e.maxQueue, fullWait))
		}
		return
	}
	if !e.enqueue(s, k, o, record, forward, root) {
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

// ForceFlush returns once every record of every span ended before the call
// is durable in the store (written, or — when another process holds the
// store until ctx ends — in its spool), or held in memory for a session
// not yet kept (under KeepByTrace, for a trace not yet decided). The
// background goroutine answers it after one take of the whole queue,
// which holds every span ended before the call: a steady stream of spans
// after it cannot starve it. It returns the error of the
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
