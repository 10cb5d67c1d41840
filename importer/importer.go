package importer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/otelrecords/otelrecords/importer/internal/seen"
	"github.com/otelrecords/otelrecords/importer/internal/taken"
	"github.com/otelrecords/otelrecords/importer/internal/unencoded"
	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// The Importer's defaults.
const (
	// DefaultSessionTimeout is how long a remote session lasts without a
	// span before it ends: OTLP has no "process exited" signal.
	DefaultSessionTimeout = time.Minute
	// DefaultDecisionWait is how long a span whose parent has not arrived
	// waits for it before it is recorded anyway, as the root of what
	// arrived below it (the tail sampler's decision_wait).
	DefaultDecisionWait = 30 * time.Second
	// DefaultDecisionGrace is how long a span that says nothing of
	// records (an implicit mark: an HTTP server's span) waits, once it
	// could be placed, for a record to arrive inside it, under
	// MarksEnclosing: a record that ends after its request (work a handler
	// left running) still finds the request held, and the request is
	// recorded. A span that is a record never waits for it (contrib
	// #31498: a fixed wait adds itself to every trace).
	DefaultDecisionGrace = 500 * time.Millisecond
	// DefaultHeldBytes is the one bound over everything an Importer holds
	// in memory for every sender: spans waiting for their parents, records
	// of sessions that have not changed anything yet, traces not decided
	// (KeepByTrace). Past it the oldest go first, whichever sender they
	// are from (see Config.HeldBytes).
	DefaultHeldBytes = 64 << 20
	// DefaultDedupWindow is how long an Importer recognises a span it has
	// taken, to take it once when the sender, or a Collector's queue,
	// delivers it again (see Importer): the exporterhelper's default
	// retry_on_failure.max_elapsed_time, so that every retry of a sender
	// or a Collector in front with the default settings comes within it.
	// It does not depend on the session timeout: a span sent again after
	// its session ended is still recognised. After a restart an Importer
	// reads the last DedupWindow of every session back from the store.
	DefaultDedupWindow = 5 * time.Minute
	// DefaultDedupBytes bounds the memory that remembering spans takes,
	// over every sender: 48 MiB, 2,097,152 spans (16 to 32 bytes each,
	// whatever the traces' shape; see Config.DedupBytes), which is
	// the whole window for a gateway taking 7,000 spans a second.
	DefaultDedupBytes = 48 << 20
	// MaxDedupWindow is the longest dedup window an Importer takes.
	MaxDedupWindow = 24 * time.Hour
)

// tickEvery is how often the Importer's goroutine places spans whose time
// has come, ends quiet sessions and writes what they kept.
const tickEvery = 100 * time.Millisecond

// Config is what only an Importer has: its sessions, its bounds, its
// dedup window and what it hands on. The Options set what it shares with
// the SpanProcessor (level, marks, keep-by, budgets). The zero value takes
// every default.
type Config struct {
	// SessionTimeout ends a remote session after this long without a
	// span. Zero means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// DecisionWait is how long a span waits for its parent. Zero means
	// DefaultDecisionWait.
	DecisionWait time.Duration
	// HeldBytes bounds, over every sender, what the Importer holds in
	// memory that no store has yet: spans waiting for their parents,
	// records of sessions not kept yet, traces not decided yet. Past it
	// the oldest go first across senders — dropped and counted as a warm
	// run's are (Stats.Evicted, and the session's tally once it is kept),
	// or for a kept session's spans, recorded without waiting longer.
	// Each session is also bounded by the pending budget
	// (WithPendingBudget), as a Go program's is. Zero means
	// DefaultHeldBytes.
	HeldBytes int
	// DedupWindow is how long a span taken is recognised when it is
	// delivered again, and taken once (see Importer). Zero means
	// DefaultDedupWindow; it is at most MaxDedupWindow.
	DedupWindow time.Duration
	// DedupBytes bounds the memory that recognising spans takes, over
	// every sender: a remembered span costs 16 to 32 bytes, and the table
	// that holds them grows by doubling, within DedupBytes with the half
	// it grew from. Past it the oldest spans are forgotten before the
	// window passes (counted in Stats.ForgottenEarly). Zero means
	// DefaultDedupBytes. It is a bound of its own, not part of HeldBytes:
	// what is remembered is what has been stored, never what waits to be,
	// and a burst of senders' held spans must not make a retry be stored
	// twice, nor the reverse.
	DedupBytes int
	// Forward, when set, is given every batch of entries, in order, just
	// before the store takes it (written, or spooled for a store another
	// process held), and before the Import that wrote them returns: the
	// Collector's records processor hands what is kept on down its
	// pipeline. Handed on first, a batch stored is one handed on, so that
	// a restart that finds it stored may drop it sent again. An error is
	// the write's: the batch stays queued, and is handed on and written
	// again. Entries are valid only during the call. See DecodeEntry.
	Forward func([]sessions.Entry) error
	// ForwardOnly, with Forward, keeps no records: they are handed on
	// (before the store takes anything), and the store in the Importer's
	// directory keeps only what it needs to take a batch once across a
	// restart and continue its senders' sessions under their ids — the
	// sessions in progress, fingerprints of the spans it handed on within
	// the dedup window (written within a round of its loop, 100 ms), the
	// spans written ahead (docs/FORMAT.md §12). The Collector's records
	// processor without a directory of records runs so. A crash between
	// handing records on and writing their fingerprints hands them on
	// again when they are sent again: downstream takes each span at least
	// once.
	ForwardOnly bool
	// AsReceived, when set, is told of each span given with an Origin
	// whose record is the span as it came, before the record can reach
	// Forward, with the Importer's lock held (quick, and not calling the
	// Importer): handed on instead of a span made from the record, the
	// span reads back as the record (docs/MAPPING.md §8.3). It reports
	// whether the caller holds the span to hand on; with ForwardOnly the
	// record is then queued unencoded (importer/internal/unencoded). A
	// span placed past its Import is told of then: the caller knows
	// whether its Origin is still its own.
	AsReceived func(AsReceived) bool
}

// AsReceived is a record that its span as it came reads back as, once it
// carries records.kind = Kind and records.seq = Seq under the Resource of
// session Session: its own clock and plausible times, nothing cut, left
// out or mapped otherwise (internal/asis).
type AsReceived struct {
	Origin  uint64 // the span's Span.Origin
	Session sessions.SessionID
	Seq     uint64
	Kind    string // sessions.MarksKind for a mark
}

// Importer records spans that did not come through this process's SDK —
// OTLP a Collector received from programs in any language — into a
// store, one session per sender process, under the same rules as the
// SpanProcessor: the same mapping, stamps, retention, levels and marks
// policy and keep-by rule (set by the Options, as the SpanProcessor's
// are). Create it with
// New, hand it spans with Import, and end it with Shutdown.
//
// A remote session is one process of a sender: the Resource's
// records.session.id when the sender sets it, else its
// service.instance.id, else the Resource as a whole (which includes
// process.pid when the sender reports it). Its session row describes the
// sender — process.pid, os.type, host.arch and the Resource — not this
// process. It ends after Config.SessionTimeout without a span, and
// at Shutdown. Any number of senders may send at once: a quiet kept
// session is written and let go, and continues under the same id when
// its sender comes back (and after a restart of the Importer, within the
// timeout); what they all hold is bounded by Config.HeldBytes.
//
// Senders' clocks disagree: a session is placed on this process's clock
// (when it arrived), its sender's clock read against it once; times that
// cannot be right are replaced, and kept beside (SpanStartKey,
// SpanEndKey).
//
// Spans are stamped so that a parent comes before its children, and
// otherwise in start order: a span waits for its parent until it
// arrives (or DecisionWait passes), and a span that says nothing of
// records waits DefaultDecisionGrace for a record inside it (MarksEnclosing).
//
// Exactly once: Import returns nil only once every span of a kept
// session in what it was given is durable (written, or set aside in the
// spool when another process holds the store), including spans that still
// wait for their parents, which are written ahead and recorded later.
// What it holds in memory — spans of sessions and traces that have not
// changed anything yet — is what a crash can lose, as a Go program's
// SpanProcessor would. A span is taken once: one already taken for its
// session (the same trace and span id), within DedupWindow, is counted
// and not recorded again, so a sender's retry or a Collector queue's
// replay stores nothing twice. While the store refuses writes (a full
// disk, a read-only file system), Import refuses spans that need a write,
// with an error that a retry can cure, and keeps nothing of them.
type Importer struct {
	cfg     Config
	opts    config // the Options, with the environment applied
	marks   Marks
	level   sessions.Level
	now     func() time.Time
	dir     string
	writer  *sharedstore.Writer // the one writer of the store; nil with WithStore
	release func()              // gives the directory back (intake.Claim)
	ids     *recorder.IDs
	reports intake.Reporter
	epoch   time.Time // the seen sets count seconds from it

	mu         sync.Mutex
	sessions   map[string]*remoteSession
	parked     map[string]*parkedSession // kept sessions let go while quiet, or ended within the dedup window
	retired    []retiredEntry            // ended sessions' entries kept until their window passes
	held       int                       // bytes held over every session (bound.go)
	seen       seen.Table                // the spans taken, over every sender, for the dedup window
	looking    seen.LookAhead            // take's working space, reused under mu
	takenQueue taken.Queue               // ForwardOnly: taken entries for the loop to write
	keySaved   bool                      // ForwardOnly: the store holds the fingerprints' key
	recovered  bool                      // what a previous run left is read back
	swept      time.Time                 // when the seen sets were last swept
	failing    error                     // the store refused the last write; nil once it takes one
	ended      recorder.Stats            // what ended sessions counted
	counts     importCounts
	closed     bool
	settling   settleScratch                           // settle's working space, reused under mu
	freeTraces []*liveTrace                            // settled traces, for the next ones (newTrace)
	recording  *scratchSpace                           // record's working space, reused under mu
	imports    unencoded.Imports[*remoteSession, Span] // the Import taking its batches, what it queued unencoded

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// importCounts is what only an Importer counts.
type importCounts struct {
	accepted, duplicates, rejected, refused, late int64
	parked, resumed, recovered, arrivals          int64
}

// New returns an Importer recording into the Badger store in dir (or,
// for "", the default store, as exporter.New). Nothing is created until a
// session is kept, but where the store goes is settled at once, as
// exporter.New settles it: New fails for a path no
// store can be written in (a file, a socket, a read-only parent, a
// directory another user could replace) and for a directory another
// exporter or Importer of this process records into. Every session
// shares one writer of the store, which lets the store go when idle so
// that the records command and other processes get their turn.
func New(dir string, ic Config, opts ...Option) (*Importer, error) {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	c.FromEnv(otel.Handle)
	if ic.SessionTimeout <= 0 {
		ic.SessionTimeout = DefaultSessionTimeout
	}
	if ic.DecisionWait <= 0 {
		ic.DecisionWait = DefaultDecisionWait
	}
	if ic.HeldBytes <= 0 {
		ic.HeldBytes = DefaultHeldBytes
	}
	if ic.DedupWindow <= 0 {
		ic.DedupWindow = DefaultDedupWindow
	}
	ic.DedupWindow = min(ic.DedupWindow, MaxDedupWindow)
	if ic.DedupBytes <= 0 {
		ic.DedupBytes = DefaultDedupBytes
	}
	if ic.ForwardOnly && (ic.Forward == nil || c.Store != nil) {
		return nil, errors.New("otelrecords: importer: ForwardOnly needs Forward, and a directory rather than WithStore")
	}
	im := &Importer{cfg: ic, opts: c, marks: c.MarksPolicy(), level: c.Recorder().Level, now: c.Now,
		ids: &recorder.ProcessIDs, sessions: make(map[string]*remoteSession), parked: make(map[string]*parkedSession),
		seen: seen.New(ic.DedupBytes), stop: make(chan struct{}), done: make(chan struct{})}
	if im.now == nil {
		im.now = clock.Real{}.Now
	}
	im.epoch = im.now()
	if c.Store == nil {
		placed, release, err := intake.Claim(dir)
		if err != nil {
			return nil, err
		}
		im.dir, im.release = placed, release
		im.writer = sharedstore.New(placed, otel.Handle)
	}
	go im.loop()
	return im, nil
}

// Dir returns the store directory, or "" when the Importer writes through
// a store given with WithStore.
func (im *Importer) Dir() string { return im.dir }

// Level returns the level in force.
func (im *Importer) Level() sessions.Level { return im.level }

// Result says what an Import did with the spans it was given.
type Result struct {
	// Accepted is how many spans were taken: recorded, held, or
	// recognised as taken before (Duplicates).
	Accepted int
	// Duplicates is how many of the accepted spans had been taken already
	// (a retry, a replay) or came twice in the call; each is recorded once.
	Duplicates int
	// Rejected is how many spans no record can be made of: without a
	// valid trace id or span id. Nothing of them is kept; a retry cannot
	// change that (OTLP's partial success: rejected_spans).
	Rejected int
	// Message says why spans were rejected, for OTLP's partial success
	// error_message; "" when none was.
	Message string
}

// ErrRefused is matched by the error Import returns when it refuses spans
// because the store refuses writes: nothing of what it was given is
// kept, and the same call later (a sender's retry) is taken once the
// store takes writes again. The error also matches the store's own
// (badgerstore.ErrNoSpace, say).
var ErrRefused = errors.New("otelrecords: importer: the store refuses writes; spans refused, retry later")

// Import records the batches' spans, and returns once they are durable or
// held under the retention rules (see Importer): nil means every span of
// a kept session among them is in the store, or in its spool. A span
// without valid trace and span ids is rejected (Result.Rejected);
// a span taken before is taken once (Result.Duplicates). An error
// means the spans may be given again — a retry stores nothing twice — and
// one matching ErrRefused means nothing of them was kept. After Shutdown
// it records nothing and returns sessions.ErrClosed.
//
// Import keeps nothing of the batches past its return: a span it holds
// is a copy, with copies of its attributes, events and links. So a caller
// may reuse the batches' memory once it returns, as the Collector
// components do from request to request; only strings and attribute
// values, which do not change, are shared.
func (im *Importer) Import(ctx context.Context, batches ...Batch) (Result, error) {
	var res Result
	if im.level == sessions.LevelOff {
		for i := range batches {
			res.Accepted += len(batches[i].Spans)
		}
		return res, nil
	}
	if err := im.refusing(ctx, batches); err != nil {
		return res, err
	}
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return res, sessions.ErrClosed
	}
	if err := im.recover(ctx); err != nil {
		im.mu.Unlock()
		return res, err
	}
	now := im.now()
	touched := make([]*remoteSession, 0, 1)
	im.imports.Begin()
	for i := range batches {
		rs, r := im.take(&batches[i], now)
		res.Accepted += r.Accepted
		res.Duplicates += r.Duplicates
		res.Rejected += r.Rejected
		if rs != nil && !rs.inflightMarked {
			rs.inflightMarked = true
			rs.inflight++
			touched = append(touched, rs)
		}
	}
	if res.Rejected > 0 {
		res.Message = fmt.Sprintf("%d spans without a valid trace id and span id: no record can be made of them", res.Rejected)
	}
	im.keepWithinHeld(now)
	for _, rs := range touched {
		rs.inflightMarked = false
	}
	queued := im.imports.End()
	im.mu.Unlock()

	// Outside the lock: writes of different senders overlap (Badger
	// commits them together), and a slow disk holds up only the calls
	// that need it.
	var errs []error
	for _, rs := range touched {
		errs = append(errs, rs.rec.Flush(ctx)) // failing, it fills in what queued holds (fillFor)
	}
	err := errors.Join(errs...)
	im.mu.Lock()
	im.imports.GiveBack(queued)
	for _, rs := range touched {
		rs.inflight--
	}
	im.wrote(err)
	im.mu.Unlock()
	return res, err
}

// wrote notes how a write went: a failure makes Import refuse spans that
// need a write until one succeeds. im.mu is held.
func (im *Importer) wrote(err error) {
	switch {
	case err == nil:
		im.failing = nil
	case errors.Is(err, sessions.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	default:
		im.failing = err
	}
}

// refusing returns an error matching ErrRefused when the store refuses
// writes and the batches need one (they carry a change, or belong to a
// kept session), after trying once more to write what waits: what it was
// given is then not taken at all, and the caller's retry finds it new.
func (im *Importer) refusing(ctx context.Context, batches []Batch) error {
	im.mu.Lock()
	failing := im.failing
	im.mu.Unlock()
	if failing == nil {
		return nil
	}
	if err := im.flushAll(ctx); err == nil {
		return nil
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.failing == nil || !im.needWrite(batches) {
		return nil
	}
	im.counts.refused += int64(countSpans(batches))
	return fmt.Errorf("%w: %w", ErrRefused, im.failing)
}

func countSpans(batches []Batch) int {
	n := 0
	for i := range batches {
		n += len(batches[i].Spans)
	}
	return n
}

// flushAll writes what every session has queued, outside the lock, and
// notes how it went.
func (im *Importer) flushAll(ctx context.Context) error {
	im.mu.Lock()
	var list []*remoteSession
	for _, rs := range im.sessions {
		if n, _ := rs.rec.Pending(); n > 0 || rs.rec.TallyDue() {
			rs.inflight++
			list = append(list, rs)
		}
	}
	im.mu.Unlock()
	var errs []error
	for _, rs := range list {
		errs = append(errs, rs.rec.Flush(ctx))
	}
	err := errors.Join(errs...)
	im.mu.Lock()
	for _, rs := range list {
		rs.inflight--
	}
	im.wrote(err)
	im.mu.Unlock()
	return err
}

// Shutdown writes what the sessions keep, closes them and lets the store
// go, within ctx. A kept session's spans still waiting for their parents
// stay written ahead, not stamped: an Importer started again on the store
// places them, after their parents when these come (within DecisionWait
// of its start), and otherwise as roots then. Spans waiting in a session
// not kept are placed under the retention rules, which drop what they
// hold. The sender entries of sessions in progress stay: an Importer
// started again on the store continues them. Calls after the first
// return nil.
func (im *Importer) Shutdown(ctx context.Context) error {
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return nil
	}
	im.closed = true
	im.mu.Unlock()
	im.halt()
	im.mu.Lock()
	ending := make([]*remoteSession, 0, len(im.sessions))
	for key, rs := range im.sessions {
		if rs.kept {
			im.leave(key, rs)
		} else {
			im.detach(key, rs)
		}
		ending = append(ending, rs)
	}
	taken := im.takenQueue.Take()
	im.mu.Unlock()
	var errs []error
	for _, rs := range ending {
		errs = append(errs, im.end(ctx, rs))
	}
	im.writeQueued(ctx, taken)
	if im.writer != nil {
		errs = append(errs, im.writer.CloseContext(ctx))
	}
	if im.release != nil {
		im.release()
	}
	return errors.Join(errs...)
}

// halt stops the loop and waits for it to end.
func (im *Importer) halt() {
	im.stopOnce.Do(func() { close(im.stop) })
	<-im.done
}

// loop is the goroutine that places spans whose time has come, ends quiet
// sessions and writes what they kept, every tickEvery.
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
// intake.BusyWait, then the store spools them; they run outside the lock.
func (im *Importer) tick() {
	ctx, cancel := context.WithTimeout(context.Background(), intake.BusyWait)
	defer cancel()
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return
	}
	if !im.recovered {
		im.handle("recover", im.recover(ctx))
	}
	now := im.now()
	var ending []*remoteSession
	for key, rs := range im.sessions {
		switch {
		case rs.inflight > 0:
		case now.Sub(rs.last) >= im.cfg.SessionTimeout:
			if n, _ := rs.rec.Pending(); n > 0 && im.failing != nil {
				break // its records wait for the store: it ends once they are written
			}
			if rs.rec.Kept() {
				// It ends: what waits is placed now and written below; then
				// it is let go as a quiet session is, and remembered for
				// the dedup window (sessionFor).
				im.settleTraces(rs, now, true)
				if rs.idle() {
					im.park(key, rs)
					continue
				}
				break
			}
			im.detach(key, rs)
			ending = append(ending, rs)
			continue
		case rs.idleKept(now):
			im.park(key, rs)
			continue
		}
		im.settleDue(rs, now)
		rs.rec.DecideTraces() // KeepByTrace: drop the unchanged traces whose grace passed
		im.writeAhead(rs, now)
		im.account(rs)
	}
	gone := im.expireParked(now)
	var cuts []takenCut
	if now.Sub(im.swept) >= sweepEvery {
		cuts = im.takenBefore(now)
	}
	im.sweepSeen(now)
	im.keepWithinHeld(now)
	taken := im.takenQueue.Take()
	im.mu.Unlock()
	im.writeQueued(ctx, taken)
	for _, rs := range ending {
		im.handle("end", im.end(ctx, rs))
	}
	if len(gone) > 0 {
		im.handle("forget", im.forgetEntries(ctx, gone))
	}
	if len(cuts) > 0 {
		im.handle("forget", im.deleteTaken(ctx, cuts))
	}
	if err := im.flushAll(ctx); err != nil {
		im.handle("write", err)
	}
}

// handle reports an error no caller receives, once per class.
func (im *Importer) handle(class string, err error) {
	if err != nil && !errors.Is(err, sessions.ErrClosed) {
		im.reports.Once(class, fmt.Errorf("otelrecords: importer: %w", err))
	}
}
