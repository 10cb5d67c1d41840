package exporter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// The Importer's defaults.
const (
	// DefaultSessionTimeout is how long a remote session lasts without a
	// span before it ends: OTLP has no "process exited" signal.
	DefaultSessionTimeout = time.Minute
	// DefaultDecisionWait is how long a trace whose root has not arrived
	// is held before it is recorded anyway (the tail sampler's
	// decision_wait).
	DefaultDecisionWait = 30 * time.Second
	// DefaultDecisionGrace is how long after its root arrives a trace is
	// recorded: spans of the trace that end after the root, or travel in
	// the next batch, still find it held. A trace is never held for the
	// whole decision wait once its root is in (contrib #31498: a fixed
	// wait adds itself to every trace).
	DefaultDecisionGrace = 500 * time.Millisecond
	// DefaultHeldBytes bounds the spans an Importer holds, over every
	// session, while their traces wait for a root: past it the oldest
	// traces are recorded without waiting longer.
	DefaultHeldBytes = 64 << 20
	// DefaultMaxSessions bounds the remote sessions in progress at once:
	// a new sender past it ends the session that has been quiet longest.
	DefaultMaxSessions = 1024
)

// decisionMemory is how long a recorded trace is remembered after its
// decision, so that a late span of it is recorded at once and nests as
// the decision left it (contrib #14760, #37189: one decision per trace).
const decisionMemory = 5 * time.Minute

// tickEvery is how often the Importer's goroutine records traces whose
// time has come, ends quiet sessions and writes what they kept.
const tickEvery = 100 * time.Millisecond

// ImporterConfig is what an Importer needs beyond the Options it shares
// with the SpanProcessor. The zero value takes every default.
type ImporterConfig struct {
	// SessionTimeout ends a remote session after this long without a
	// span. Zero means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// DecisionWait is how long a trace is held for its root. Zero means
	// DefaultDecisionWait.
	DecisionWait time.Duration
	// HeldBytes bounds the spans held for their traces' roots, over every
	// session. Zero means DefaultHeldBytes.
	HeldBytes int
	// MaxSessions bounds the sessions in progress. Zero means
	// DefaultMaxSessions.
	MaxSessions int
}

// Importer records spans that did not come through this process's SDK —
// OTLP a Collector received from programs in any language — into a
// store, one session per sender process, under the same rules as the
// SpanProcessor: the same mapping, stamps, retention, levels and marks
// policy and keep-by rule (the Options are the SpanProcessor's;
// WithMaxQueueSize and WithForward do not apply). Create it with NewImporter, hand it spans
// with Import, and end it with Shutdown.
//
// A remote session is one process of a sender: the Resource's
// records.session.id when the sender sets it, else its
// service.instance.id, else the Resource as a whole (which includes
// process.pid when the sender reports it). Its session row describes the
// sender — process.pid, os.type, host.arch and the Resource (service.name,
// host.name, ...) — not this process. It ends after
// ImporterConfig.SessionTimeout without a span, and at Shutdown.
//
// Spans are stamped by their own start times, in start order, a parent
// before its children at an equal time (clocks of millisecond precision
// give many). A trace is held until its root arrives and
// DefaultDecisionGrace has passed, or until DecisionWait passes, so that
// a child exported in an earlier batch than its parent still nests under
// it, and an implicit mark (MarksEnclosing) learns of the records it
// encloses before it is decided. Each decision is remembered for a while:
// a span of the trace arriving later is recorded at once, and an implicit
// mark of it is recorded when the decision found a record inside it.
type Importer struct {
	cfg     ImporterConfig
	opts    config // the shared Options, with the environment applied
	marks   Marks
	level   sessions.Level
	now     func() time.Time
	dir     string
	writer  *sharedstore.Writer // the one writer of the store; nil with WithStore
	ids     *recorder.IDs
	reports reporter

	mu       sync.Mutex
	sessions map[string]*remoteSession
	held     int   // bytes of spans held over every session
	arrivals int64 // traces held so far: each held trace's arrival number
	ended    Stats // what ended sessions counted
	late     int64 // spans recorded after their trace's decision
	closed   bool

	stop chan struct{}
	done chan struct{}
}

// NewImporter returns an Importer recording into the Badger store in dir
// (or, for "", the default store, as New) with the same Options as New.
// Nothing is opened or created until a session is kept. Every session
// shares one writer of the store, which lets the store go when idle so
// that the records command and other processes get their turn.
func NewImporter(dir string, ic ImporterConfig, opts ...Option) (*Importer, error) {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	c.fromEnv(otel.Handle)
	if ic.SessionTimeout <= 0 {
		ic.SessionTimeout = DefaultSessionTimeout
	}
	if ic.DecisionWait <= 0 {
		ic.DecisionWait = DefaultDecisionWait
	}
	if ic.HeldBytes <= 0 {
		ic.HeldBytes = DefaultHeldBytes
	}
	if ic.MaxSessions <= 0 {
		ic.MaxSessions = DefaultMaxSessions
	}
	im := &Importer{cfg: ic, opts: c, marks: c.marksPolicy(), level: c.recorderConfig().Level, now: c.now,
		ids: &recorder.ProcessIDs, sessions: make(map[string]*remoteSession),
		stop: make(chan struct{}), done: make(chan struct{})}
	if im.now == nil {
		im.now = clock.Real{}.Now
	}
	if c.store == nil {
		dir, err := storeDir(dir)
		if err != nil {
			return nil, err
		}
		im.dir = dir
		im.writer = sharedstore.New(dir, otel.Handle)
	}
	go im.loop()
	return im, nil
}

// Dir returns the store directory, or "" when the Importer writes through
// a store given with WithStore.
func (im *Importer) Dir() string { return im.dir }

// Level returns the level in force.
func (im *Importer) Level() sessions.Level { return im.level }

// Import records the batches' spans. It returns once what it was given
// is durable — written, or held under the retention rules (a session not
// kept yet, a trace waiting for its root), or set aside in the store's
// spool when another process holds the store past ctx — or with the
// error that kept some of it from being written; records that failed to
// write stay queued and are tried again. A span without valid trace and
// span ids is refused and counted in Stats().Problems. After Shutdown it
// records nothing and returns sessions.ErrClosed.
func (im *Importer) Import(ctx context.Context, batches ...ImportBatch) error {
	if im.level == sessions.LevelOff {
		return nil
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.closed {
		return sessions.ErrClosed
	}
	now := im.now()
	touched := make(map[*remoteSession]struct{})
	for i := range batches {
		b := &batches[i]
		rs := im.session(b.Resource, now)
		if rs == nil {
			continue
		}
		touched[rs] = struct{}{}
		for j := range b.Spans {
			im.add(rs, &b.Spans[j], now)
		}
	}
	im.keepWithinHeld()
	var errs []error
	for rs := range touched {
		errs = append(errs, im.decideDue(ctx, rs, now), rs.rec.Flush(ctx))
	}
	return errors.Join(errs...)
}

// Shutdown records every held trace, writes what the sessions keep,
// closes them and lets the store go, within ctx. Calls after the first
// return nil.
func (im *Importer) Shutdown(ctx context.Context) error {
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return nil
	}
	im.closed = true
	close(im.stop)
	var errs []error
	for key, rs := range im.sessions {
		errs = append(errs, im.end(ctx, key, rs))
	}
	im.mu.Unlock()
	<-im.done
	if im.writer != nil {
		errs = append(errs, im.writer.CloseContext(ctx))
	}
	return errors.Join(errs...)
}

// loop is the goroutine that records traces whose time has come, ends
// quiet sessions and writes what they kept, every tickEvery.
func (im *Importer) loop() {
	defer close(im.done)
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-im.stop:
			return
		case <-t.C:
			im.tick()
		}
	}
}

// tick is one round of the loop. Its writes wait for a busy store at most
// busyWait, then the store spools them.
func (im *Importer) tick() {
	ctx, cancel := context.WithTimeout(context.Background(), busyWait)
	defer cancel()
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.closed {
		return
	}
	now := im.now()
	for key, rs := range im.sessions {
		if now.Sub(rs.last) >= im.cfg.SessionTimeout {
			im.handle("end", im.end(ctx, key, rs))
			continue
		}
		im.handle("write", im.decideDue(ctx, rs, now))
		rs.rec.DecideTraces() // KeepByTrace: drop the unchanged traces whose grace passed
		rs.forget(now)
		im.handle("write", rs.rec.Flush(ctx))
	}
}

// handle reports an error no caller receives, once per class.
func (im *Importer) handle(class string, err error) {
	if err != nil && !errors.Is(err, sessions.ErrClosed) {
		im.reports.once(class, fmt.Errorf("otelrecords: importer: %w", err))
	}
}

// Stats returns what the Importer counted, over its sessions in progress
// and those that ended.
func (im *Importer) Stats() ImporterStats {
	im.mu.Lock()
	defer im.mu.Unlock()
	st := ImporterStats{Stats: im.ended, Sessions: len(im.sessions), HeldSpanBytes: int64(im.held), Late: im.late}
	for _, rs := range im.sessions {
		addStats(&st.Stats, rs.stats())
		for _, t := range rs.traces {
			st.HeldSpans += int64(len(t.spans))
		}
	}
	return st
}

// ImporterStats counts what an Importer did: the SpanProcessor's
// counters, summed over its sessions, and what only an Importer does.
type ImporterStats struct {
	Stats
	// Sessions is how many remote sessions are in progress.
	Sessions int
	// HeldSpans is how many spans wait for their trace's root.
	HeldSpans int64
	// HeldSpanBytes is what those spans count against
	// ImporterConfig.HeldBytes.
	HeldSpanBytes int64
	// Late is how many spans arrived after their trace was decided, and
	// were recorded (or not) by the remembered decision.
	Late int64
}

// addStats adds what one session counted to a sum.
func addStats(sum *Stats, s Stats) {
	sum.Written += s.Written
	sum.Held += s.Held
	sum.HeldBytes += s.HeldBytes
	sum.Evicted += s.Evicted
	sum.Invalid += s.Invalid
	sum.TooLarge += s.TooLarge
	sum.WriteErrors += s.WriteErrors
	sum.SessionsKept += s.SessionsKept
	sum.Pending += s.Pending
	sum.Spooled += s.Spooled
	sum.TrimmedSessions += s.TrimmedSessions
	sum.TrimmedRecords += s.TrimmedRecords
	sum.Problems += s.Problems
	sum.AttributesDropped += s.AttributesDropped
	sum.StoreBytes = max(sum.StoreBytes, s.StoreBytes)
	sum.StoreOpens = max(sum.StoreOpens, s.StoreOpens) // one writer: every session sees its count
	sum.BusyWaits = max(sum.BusyWaits, s.BusyWaits)
}
