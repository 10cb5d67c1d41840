package recorder

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/hold"
	"github.com/otelrecords/otelrecords/internal/ground/version"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
)

// Recorder is the session in progress on one store: it stamps records,
// holds them in memory until the session changes something, and then keeps
// the session and writes through a Store. It implements every retention
// rule; package exporter drives it from OpenTelemetry spans, but it has no
// OpenTelemetry in it.
//
// Stamp is safe to call from any goroutine and cheap; the other methods
// serialise on a mutex and may do I/O (opening the store, writing), so the
// exporter calls them from its own goroutine, never from a span call.
type Recorder struct {
	open   func() (sessions.Store, error)
	sink   Sink                  // Config.Sink; nil: batches go to the store
	fill   func(*sessions.Entry) // Config.Fill
	onKeep func()
	now    func() time.Time
	ids    *IDs
	exact  bool // Config.ExactIDs
	report func(class string, err error)
	bound  *bound  // MaxBytes's; nil without it. Used only under flushing.
	proc   Process // what the session row says of the process

	level atomic.Int32
	start atomic.Pointer[start] // nil until the first stamp
	begin sync.Mutex            // serialises the lazy start
	seq   atomic.Uint64

	flushing  sync.Mutex // one Flush or Close at a time; held across I/O
	mu        sync.Mutex // guards the fields below; never held across I/O
	label     string
	resource  sessions.Attrs
	keep      int // 0: keep every session
	budget    int // held bytes allowed; 0 holds nothing
	held      *hold.Buffer[struct{}]
	kept      bool
	needPrune bool
	store     sessions.Store
	batch     []sessions.Entry // written on the next Flush, in order
	queued    int              // bytes of keys and values in batch
	// arena holds the keys and values of the records in batch, which
	// point into it (or into the arrays it outgrew), so that queueing a
	// record allocates nothing; spare is the last written batch and arena,
	// emptied for the next. Stores do not retain what they were given to
	// write (sessions.Store), so a written arena may be written over.
	arena      []byte
	spareBatch []sessions.Entry
	spareArena []byte
	closed     bool
	stats      Stats
	keepBy     KeepBy
	traces     traces // KeepByTrace's undecided traces and decisions
	// shedSaid holds the classes shed reported in this failing streak,
	// and streak counts the streaks, so each is reported once (shed.go).
	shedSaid map[string]bool
	streak   int
	imported bool // Config.Imported
	// tally counts what the session lets go (tally.go), written as part
	// tallyPart, last queued at tallyAt.
	tally       *tally.Counter
	tallyPart   uint64
	tallyAt     time.Time
	tallyQueued bool
	tallyEvery  time.Duration
}

// New returns the recorder of a session that has not started yet.
// open is called once, when the session is kept (its first Changed record),
// so a session that changes nothing never opens — or creates — its store;
// if open fails it is called again at the next Flush. now is the clock
// (nil means time.Now); tests pass a fake one.
func New(cfg Config, open func() (sessions.Store, error), now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	r := &Recorder{open: open, sink: cfg.Sink, fill: cfg.Fill, onKeep: cfg.OnKeep, now: now, ids: cfg.IDs, exact: cfg.ExactIDs, report: cfg.Report,
		label: cfg.Label, resource: cfg.Resource, keep: cfg.KeepSessions, keepBy: cfg.KeepBy}
	r.proc = Process{PID: os.Getpid(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if cfg.Process != nil {
		r.proc = *cfg.Process
	}
	if cfg.MaxBytes > 0 {
		r.bound = newBound(cfg.MaxBytes)
	}
	switch {
	case cfg.PendingBudget == 0:
		r.budget = DefaultPendingBudget
	case cfg.PendingBudget < 0:
		r.budget = 0
	default:
		r.budget = cfg.PendingBudget
	}
	r.held = hold.New[struct{}](r.budget)
	r.newTally(cfg.TallyEvery)
	r.level.Store(int32(cfg.Level))
	r.imported = cfg.Imported
	if rs := cfg.Resume; rs != nil {
		r.start.Store(&start{id: rs.ID, at: rs.Start})
		r.seq.Store(rs.NextSeq)
		r.kept = true
		r.stats.SessionsKept = 1
	}
	return r
}

// Level returns the level in force.
func (r *Recorder) Level() sessions.Level { return sessions.Level(r.level.Load()) }

// KeepBy returns the unit the Recorder's retention rules keep.
func (r *Recorder) KeepBy() KeepBy { return r.keepBy }

// SetLevel changes the level. It does not end the session in progress:
// records already stamped are still recorded, and stamping resumes where
// it stopped when the level is raised again.
func (r *Recorder) SetLevel(l sessions.Level) { r.level.Store(int32(l)) }

// Session returns the session row as it would be written now, and false if
// the session has not started.
func (r *Recorder) Session() (sessions.Session, bool) {
	s := r.start.Load()
	if s == nil {
		return sessions.Session{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.row(s), true
}

func (r *Recorder) row(s *start) sessions.Session {
	// Cut to fit: a row the store refuses would keep every record of the
	// session out with it (issue 11.9).
	return cutRow(sessions.Session{
		ID:            s.id,
		StartedUnixMs: s.at.UnixMilli(),
		Version:       version.Module(),
		Label:         r.label,
		Process:       r.proc.PID,
		OS:            r.proc.OS,
		Arch:          r.proc.Arch,
		Resource:      r.resource,
	})
}

// Kept reports whether the session has been kept (it recorded a change).
func (r *Recorder) Kept() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept
}

// Label names what the process is doing, for the session in progress. On a
// kept session the session row is rewritten at the next Flush; otherwise
// the label is written when the session is kept.
func (r *Recorder) Label(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.label = label
	if r.kept && !r.closed {
		r.queueSession()
	}
}

// SetResource sets the attributes describing the process (the
// OpenTelemetry Resource), written in the session row. On a kept session
// the row is rewritten at the next Flush.
func (r *Recorder) SetResource(attrs sessions.Attrs) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resource = attrs
	if r.kept && !r.closed {
		r.queueSession()
	}
}
