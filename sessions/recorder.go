package sessions

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
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
	open func() (Store, error)
	now  func() time.Time

	level atomic.Int32
	start atomic.Pointer[start] // nil until the first stamp
	begin sync.Mutex            // serialises the lazy start
	seq   atomic.Uint64

	flushing  sync.Mutex // one Flush or Close at a time; held across I/O
	mu        sync.Mutex // guards the fields below; never held across I/O
	label     string
	resource  Attrs
	keep      int // 0: keep every session
	budget    int // held bytes allowed; 0 holds nothing
	held      []Entry
	heldBytes int
	kept      bool
	needPrune bool
	store     Store
	batch     []Entry // written on the next Flush, in order
	closed    bool
	stats     Stats
}

type start struct {
	id SessionID
	at time.Time // carries a monotonic reading with the real clock
}

// Stats counts what a Recorder did with the records it was given, so a
// user can tell when records are dropped and why.
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
	// WriteErrors is how many times opening or writing the store failed.
	WriteErrors int64
	// SessionsKept is 1 once the session is kept, else 0.
	SessionsKept int64
	// StoreOpens is how many times the store was opened.
	StoreOpens int64
	// Pending is how many records wait to be written on the next Flush.
	Pending int64
}

// NewRecorder returns the recorder of a session that has not started yet.
// open is called once, when the session is kept (its first Changed record),
// so a session that changes nothing never opens — or creates — its store;
// if open fails it is called again at the next Flush. now is the clock
// (nil means time.Now); tests pass a fake one.
func NewRecorder(cfg Config, open func() (Store, error), now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	r := &Recorder{open: open, now: now, label: cfg.Label, resource: cfg.Resource, keep: cfg.KeepSessions}
	switch {
	case cfg.PendingBudget == 0:
		r.budget = DefaultPendingBudget
	case cfg.PendingBudget < 0:
		r.budget = 0
	default:
		r.budget = cfg.PendingBudget
	}
	r.level.Store(int32(cfg.Level))
	return r
}

// Level returns the level in force.
func (r *Recorder) Level() Level { return Level(r.level.Load()) }

// SetLevel changes the level. It does not end the session in progress:
// records already stamped are still recorded, and stamping resumes where
// it stopped when the level is raised again.
func (r *Recorder) SetLevel(l Level) { r.level.Store(int32(l)) }

// Stamp places a record that starts at the instant at (the zero time means
// now) in the session, starting the session if this is its first stamp. It
// returns false at LevelOff, where nothing is stamped. Seqs are unique and
// increase in the order Stamp is called; offsets are measured from the
// session's start on the monotonic clock and never negative.
func (r *Recorder) Stamp(at time.Time) (Stamp, bool) {
	if r.level.Load() == int32(LevelOff) {
		return Stamp{}, false
	}
	s := r.start.Load()
	if s == nil {
		s = r.startSession()
	}
	if at.IsZero() {
		at = r.now()
	}
	off := at.Sub(s.at)
	if off < 0 {
		// A span that began just before the session's clock was read (its
		// start is taken before the processor sees it) starts at 0.
		off = 0
	}
	return Stamp{Session: s.id, Seq: r.seq.Add(1) - 1, Offset: off}, true
}

func (r *Recorder) startSession() *start {
	r.begin.Lock()
	defer r.begin.Unlock()
	if s := r.start.Load(); s != nil {
		return s
	}
	at := r.now()
	s := &start{id: SessionID(at.UnixNano()), at: at}
	r.start.Store(s)
	return s
}

// Session returns the session row as it would be written now, and false if
// the session has not started.
func (r *Recorder) Session() (Session, bool) {
	s := r.start.Load()
	if s == nil {
		return Session{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.row(s), true
}

func (r *Recorder) row(s *start) Session {
	return Session{
		ID:            s.id,
		StartedUnixMs: s.at.UnixMilli(),
		Version:       Version(),
		Label:         r.label,
		Process:       os.Getpid(),
		OS:            runtime.GOOS,
		Arch:          runtime.GOARCH,
		Resource:      r.resource,
	}
}

// Kept reports whether the session has been kept (it recorded a change).
func (r *Recorder) Kept() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept
}

// Record routes one stamped record through the retention rules. Before the
// session's first Changed record it is held in memory (past the budget the
// oldest held records go first); the first Changed record keeps the
// session: prune to KeepSessions-1 other sessions, write the session row,
// the held records oldest first, then the record itself; after that every
// record is written. Writes are batched until Flush. The kind must pass
// CheckKind; a record with an invalid kind is refused with an error
// wrapping ErrInvalidKind, and nothing else changes.
func (r *Recorder) Record(kind string, effect Effect, st Stamp, body Record) error {
	k, err := CheckKind(kind)
	if err != nil {
		r.mu.Lock()
		r.stats.Invalid++
		r.mu.Unlock()
		return err
	}
	value, err := EncodeRecord(Stamped[Record]{Stamp: st, Record: body})
	if err != nil {
		return fmt.Errorf("otelrecords: encode %s record: %w", k, err)
	}
	e := Entry{Key: RecordKey(k, st), Value: value}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	switch {
	case r.kept:
		r.batch = append(r.batch, e)
	case effect == Changed:
		r.keepSession()
		r.batch = append(r.batch, e)
	default:
		r.hold(e)
	}
	return nil
}

// hold appends e to the held records, then drops the oldest until the held
// bytes fit the budget. A record larger than the budget on its own empties
// the buffer, itself included: what is held is always the newest run of
// records that fits.
func (r *Recorder) hold(e Entry) {
	r.held = append(r.held, e)
	r.heldBytes += len(e.Key) + len(e.Value)
	drop := 0
	for r.heldBytes > r.budget && drop < len(r.held) {
		r.heldBytes -= len(r.held[drop].Key) + len(r.held[drop].Value)
		r.held[drop] = Entry{}
		drop++
	}
	if drop > 0 {
		r.stats.Evicted += int64(drop)
		r.held = r.held[drop:]
		// Give the backing array back once it is mostly dead, so a session
		// that never changes anything holds no more than its budget.
		if len(r.held) == 0 {
			r.held = nil
		} else if cap(r.held) > 64 && len(r.held) < cap(r.held)/4 {
			r.held = append([]Entry(nil), r.held...)
		}
	}
}

// keepSession marks the session kept and queues the session row and the
// held records, oldest first. The prune that must come before them runs at
// the next Flush, once the store is open.
func (r *Recorder) keepSession() {
	r.kept = true
	r.needPrune = r.keep > 0
	r.stats.SessionsKept = 1
	r.queueSession()
	r.batch = append(r.batch, r.held...)
	r.held, r.heldBytes = nil, 0
}

// queueSession queues the session row as it is now.
func (r *Recorder) queueSession() {
	s := r.start.Load()
	if s == nil {
		s = r.startSession()
	}
	v, err := EncodeSession(r.row(s))
	if err != nil {
		// A session row holds only strings, integers and attribute values,
		// which always encode; should one not, the records still go out.
		r.stats.WriteErrors++
		return
	}
	r.batch = append(r.batch, Entry{Key: SessionKey(s.id), Value: v})
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

// Flush writes every queued record and session row in one batch, opening
// the store (and pruning it) first if the session was just kept. On error
// the batch stays queued and the next Flush tries again; writing an entry
// twice is harmless, since its key is its stamp. Flush holds no lock that
// Record, Label or Stamp need while it does I/O.
func (r *Recorder) Flush() error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	return r.flush()
}

// flush runs with r.flushing held, so one flush at a time owns r.store and
// r.needPrune.
func (r *Recorder) flush() error {
	r.mu.Lock()
	batch := r.batch
	r.batch = nil
	needPrune := r.needPrune
	r.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := r.write(batch, needPrune)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.stats.WriteErrors++
		// Put the batch back in front of whatever was queued meanwhile, so
		// order is kept when the next Flush writes it.
		r.batch = append(batch, r.batch...)
		return err
	}
	r.needPrune = false
	for _, e := range batch {
		if !isSessionKey(e.Key) {
			r.stats.Written++
		}
	}
	return nil
}

func (r *Recorder) write(batch []Entry, needPrune bool) error {
	if r.store == nil {
		if r.open == nil {
			return errors.New("otelrecords: no store to write to")
		}
		st, err := r.open()
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.store = st
		r.stats.StoreOpens++
		r.mu.Unlock()
	}
	if needPrune {
		if _, err := NewRecords(r.store).pruneOthers(r.keep-1, r.start.Load().id); err != nil {
			return fmt.Errorf("otelrecords: prune before keeping the session: %w", err)
		}
		r.mu.Lock()
		r.needPrune = false
		r.mu.Unlock()
	}
	return r.store.Write(batch)
}

func isSessionKey(k []byte) bool {
	return len(k) == len(SessionsNamespace)+9 && string(k[:len(SessionsNamespace)]) == SessionsNamespace
}

// Close flushes and closes the store (if it was ever opened). Records
// given after Close are refused with ErrClosed. Calls after the first
// return nil.
func (r *Recorder) Close() error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.held, r.heldBytes = nil, 0
	r.mu.Unlock()
	err := r.flush()
	if r.store != nil {
		err = errors.Join(err, r.store.Close())
	}
	return err
}

// SetResource sets the attributes describing the process (the
// OpenTelemetry Resource), written in the session row. On a kept session
// the row is rewritten at the next Flush.
func (r *Recorder) SetResource(attrs Attrs) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resource = attrs
	if r.kept && !r.closed {
		r.queueSession()
	}
}

// LabelText returns the label in force.
func (r *Recorder) LabelText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.label
}

// Stats returns the recorder's counters.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Held = int64(len(r.held))
	s.HeldBytes = int64(r.heldBytes)
	for _, e := range r.batch {
		if !isSessionKey(e.Key) {
			s.Pending++
		}
	}
	return s
}

// Version returns this library's module version, as debug.ReadBuildInfo
// reports it: "(devel)" in a build of the module itself, the tagged version
// in a program that depends on it.
func Version() string { return versionOnce() }

var versionOnce = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const path = "github.com/otelrecords/otelrecords"
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "unknown"
})
