package recorder

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/ground/hold"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/ground/version"
	"github.com/otelrecords/otelrecords/sessions"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPendingBudget is the default byte budget of the records a session
// holds in memory before its first change: 1 MiB.
const DefaultPendingBudget = 1 << 20

// SpillBytes bounds the records of a kept session that wait in memory for
// a busy store: a Flush of this many bytes of keys and values or more
// does not wait for a store another process holds but spools them at
// once (a BusyStore's WriteContext with a context already ended), and
// Full tells the caller to Flush before queueing more. About 35,000
// records of 200 bytes; spooling them takes about 0.1 s.
const SpillBytes = 8 << 20

// Config says how much a session records and how long a store keeps it.
// The zero Config is usable: level off (set Level to record), every
// session kept, the default budget.
type Config struct {
	// Level is how much is recorded.
	Level sessions.Level
	// KeepSessions, when positive, is how many sessions the store keeps:
	// when a session is kept, the store is pruned to the newest
	// KeepSessions-1 other sessions, so the session being kept always
	// survives. Zero (unset) keeps every session; to keep "0" sessions,
	// which the retention rules treat as 1, set 1.
	KeepSessions int
	// PendingBudget is the byte budget of held records (namespace + key +
	// value bytes) before the session's first change; past it the oldest
	// go first. Zero means DefaultPendingBudget; negative means no record
	// is held at all.
	PendingBudget int
	// Label names what the process is doing, for the session.
	Label string
	// Resource is the set of attributes describing the process (the
	// OpenTelemetry Resource), copied into the session row.
	Resource sessions.Attrs
	// OnKeep, if set, is called once, when the session is kept, from the
	// goroutine whose Record kept it, after the kept records are queued:
	// the "session kept" hook the forwarder holds its spans until.
	OnKeep func()
	// IDs, when set, keeps the ids of the sessions started through it
	// unique (see IDs). Without it a session's id is its start, as is.
	IDs *IDs
	// MaxBytes, when positive, bounds the store's size once the session is
	// kept, counted as the pending budget counts (key + value bytes of
	// every entry): past it, other sessions older than this one are
	// deleted first, oldest first, then this session's oldest records,
	// never its row. Zero (unset) leaves the store unbounded.
	MaxBytes int64
	// Report, if set, is given what no caller can receive, with a class
	// for deduplication: that the byte bound deleted something, and why it
	// could not. It is called from the goroutine that flushes.
	Report func(class string, err error)
}

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
	onKeep func()
	now    func() time.Time
	ids    *IDs
	report func(class string, err error)
	bound  *bound // MaxBytes's; nil without it. Used only under flushing.

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
}

type start struct {
	id sessions.SessionID
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
	// TooLarge is how many records were dropped because no store could
	// hold them (see MaxRecordSize and ErrTooLarge).
	TooLarge int64
	// WriteErrors is how many times opening or writing the store failed.
	WriteErrors int64
	// SessionsKept is 1 once the session is kept, else 0.
	SessionsKept int64
	// StoreOpens is how many times the store was opened.
	StoreOpens int64
	// Pending is how many records wait to be written on the next Flush.
	Pending int64
	// BusyWaits is how many times a write found the store held by another
	// process and waited for it: normal operation, not an error.
	BusyWaits int64
	// Spooled is how many records were set aside in the store's spool
	// because another process held the store past a write's wait, or
	// when the batch reached SpillBytes, or at Close; the next opener
	// writes them.
	Spooled int64
	// TrimmedSessions is how many other sessions were deleted to keep the
	// store within MaxBytes.
	TrimmedSessions int64
	// TrimmedRecords is how many of this session's own records were
	// deleted to keep the store within MaxBytes, oldest first.
	TrimmedRecords int64
	// StoreBytes is the store's size as MaxBytes counts it, after the last
	// write: 0 without MaxBytes, or before the session is kept.
	StoreBytes int64
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
	r := &Recorder{open: open, onKeep: cfg.OnKeep, now: now, ids: cfg.IDs, report: cfg.Report,
		label: cfg.Label, resource: cfg.Resource, keep: cfg.KeepSessions}
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
	r.level.Store(int32(cfg.Level))
	return r
}

// Level returns the level in force.
func (r *Recorder) Level() sessions.Level { return sessions.Level(r.level.Load()) }

// SetLevel changes the level. It does not end the session in progress:
// records already stamped are still recorded, and stamping resumes where
// it stopped when the level is raised again.
func (r *Recorder) SetLevel(l sessions.Level) { r.level.Store(int32(l)) }

// Stamp places a record that starts at the instant at (the zero time means
// now) in the session, starting the session if this is its first stamp. It
// returns false at LevelOff, where nothing is stamped. Seqs are unique and
// increase in the order Stamp is called.
//
// The session starts at its first stamp's instant, not when Stamp reads a
// clock: a span's start is taken before the processor sees it, and a span
// may carry an explicit earlier start (trace.WithTimestamp), so a clock
// read here would fall after it and push the span onto the next one. (If
// the clock reads earlier than that instant — a stamp for an instant still
// to come, as a test's fixture gives — the session starts at the clock's
// reading: it has begun by then.)
// Offsets are measured from that start, on the monotonic clock when both
// instants carry a reading. An instant earlier than the session's start (a
// later stamp whose span says it began before the first one did) gives a
// negative offset: the session's id and the offsets already handed out
// cannot move, and clamping it to 0 would draw the record overlapping
// records it did not overlap.
func (r *Recorder) Stamp(at time.Time) (sessions.Stamp, bool) {
	if r.level.Load() == int32(sessions.LevelOff) {
		return sessions.Stamp{}, false
	}
	if at.IsZero() {
		at = r.now()
	}
	s := r.start.Load()
	if s == nil {
		s = r.startSession(at)
	}
	return sessions.Stamp{Session: s.id, Seq: r.seq.Add(1) - 1, Offset: at.Sub(s.at)}, true
}

// startSession starts the session at the instant at, unless a concurrent
// first stamp started it already.
func (r *Recorder) startSession(at time.Time) *start {
	r.begin.Lock()
	defer r.begin.Unlock()
	if s := r.start.Load(); s != nil {
		return s
	}
	if now := r.now(); now.Before(at) {
		at = now
	}
	// Nanoseconds since the epoch: unique enough between processes whose
	// starts come from their clocks, and they sort sessions by start
	// without a lookup.
	id := uint64(max(at.UnixNano(), 1))
	if r.ids != nil {
		id = r.ids.claim(id)
	}
	s := &start{id: sessions.SessionID(id), at: at}
	r.start.Store(s)
	return s
}

// IDs is a set of session ids already taken. Two sessions of one process
// may start at the same instant — two exporters on one provider see the
// same first span, and explicit timestamps (trace.WithTimestamp) repeat —
// and would then write over each other's records. A session whose start is
// taken takes the next free nanosecond instead: its id stays within
// nanoseconds of its start, and still sorts it among the others.
type IDs struct {
	mu    sync.Mutex
	taken map[uint64]struct{}
}

// ProcessIDs is the set of the ids every exporter of this process took.
var ProcessIDs IDs

// claim takes id, or the next free one after it, and returns it.
func (ids *IDs) claim(id uint64) uint64 {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.taken == nil {
		ids.taken = make(map[uint64]struct{})
	}
	for {
		if _, ok := ids.taken[id]; !ok {
			break
		}
		id++
	}
	ids.taken[id] = struct{}{}
	return id
}

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
		Process:       os.Getpid(),
		OS:            runtime.GOOS,
		Arch:          runtime.GOARCH,
		Resource:      r.resource,
	})
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
// wrapping ErrInvalidKind, and nothing else changes. A record no store can
// hold (larger than MaxRecordSize, say) is dropped with an error wrapping
// ErrTooLarge and counted in Stats.TooLarge; if it was Changed, it still
// keeps the session.
func (r *Recorder) Record(kind string, effect sessions.Effect, st sessions.Stamp, body sessions.Record) error {
	k, err := r.checkKind(kind)
	if err != nil {
		return err
	}
	body.Effect = effect // the record says what it did (FORMAT.md §3.5)
	value, err := AppendEncoded(nil, k, st, &body)
	if errors.Is(err, ErrTooLarge) {
		return r.routeLocked(k, effect, st, nil, err, body.Name)
	}
	if err != nil {
		return fmt.Errorf("otelrecords: encode %s record: %w", k, err)
	}
	return r.routeLocked(k, effect, st, value, nil, "")
}

// RecordEncoded is Record for a record already encoded, as AppendEncoded
// encodes it (with its stamp st, and effect in its body): the exporter
// encodes on the goroutine that ended the span and hands the loop bytes.
// The value is copied (into the held records, or into the batch's arena),
// so the caller may reuse it at once; routing it allocates nothing once
// the buffers have grown to the session's pace.
func (r *Recorder) RecordEncoded(kind string, effect sessions.Effect, st sessions.Stamp, value []byte) error {
	k, err := r.checkKind(kind)
	if err != nil {
		return err
	}
	return r.routeLocked(k, effect, st, value, nil, "")
}

// RecordTooLarge routes a record that could not be encoded within what a
// store holds (cause wraps ErrTooLarge, as AppendEncoded returns it): it
// is dropped and counted in Stats.TooLarge, and if it was Changed it still
// keeps the session. The error it returns names the record (name) and
// says why.
func (r *Recorder) RecordTooLarge(kind string, effect sessions.Effect, name string, cause error) error {
	k, err := r.checkKind(kind)
	if err != nil {
		return err
	}
	return r.routeLocked(k, effect, sessions.Stamp{}, nil, cause, name)
}

// checkKind returns kind in canonical form, or counts it Invalid.
func (r *Recorder) checkKind(kind string) (string, error) {
	k, err := keys.CheckKind(kind)
	if err != nil {
		r.mu.Lock()
		r.stats.Invalid++
		r.mu.Unlock()
	}
	return k, err
}

// routeLocked routes under r.mu and calls the keep hook, outside it, if
// this record kept the session.
func (r *Recorder) routeLocked(k string, effect sessions.Effect, st sessions.Stamp, value []byte, encErr error, name string) error {
	r.mu.Lock()
	wasKept := r.kept
	err := r.route(k, effect, st, value, encErr, name)
	keptNow := !wasKept && r.kept
	r.mu.Unlock()
	if keptNow && r.onKeep != nil {
		r.onKeep() // outside the lock: the hook may call back
	}
	return err
}

// route applies the retention rules to an encoded record (or to encErr,
// why it could not be encoded); r.mu is held.
func (r *Recorder) route(k string, effect sessions.Effect, st sessions.Stamp, value []byte, err error, name string) error {
	if r.closed {
		return sessions.ErrClosed
	}
	if err != nil {
		// Dropped here, once: queued, a record no store takes would fail
		// its batch at every flush and hold back every record after it.
		// A change still keeps the session, which did change the caches.
		r.stats.TooLarge++
		if effect == sessions.Changed && !r.kept {
			r.keepSession()
		}
		return fmt.Errorf("otelrecords: %s record %q dropped: %w", k, cutName(name), err)
	}
	if !r.kept && effect != sessions.Changed {
		// A held record needs no key until the session is kept: its kind
		// and stamp give it back then.
		r.stats.Evicted += int64(r.holdRecord(k, st, value))
		return nil
	}
	if !r.kept {
		r.keepSession()
	}
	r.queueRecord(k, uint64(st.Session), st.Seq, value)
	return nil
}

// queueRecord appends a record's key and a copy of its value to the
// arena, and the entry to the batch; r.mu is held. Entries queued before
// the arena grew keep pointing into the array it outgrew, which stays
// theirs.
func (r *Recorder) queueRecord(kind string, session, seq uint64, value []byte) {
	start := len(r.arena)
	r.arena = keys.AppendRecord(r.arena, kind, session, seq)
	mid := len(r.arena)
	r.arena = append(r.arena, value...)
	end := len(r.arena)
	r.queue(sessions.Entry{Key: r.arena[start:mid:mid], Value: r.arena[mid:end:end]})
}

// Pending returns how many entries (records and session rows) are queued
// for the next Flush, and their bytes of keys and values: the exporter
// writes early once they pass a bound, rather than wait for its interval,
// and counts them among what waits behind a busy store.
func (r *Recorder) Pending() (entries, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batch), r.queued
}

// queue appends e to the batch; r.mu is held.
func (r *Recorder) queue(e sessions.Entry) {
	r.batch = append(r.batch, e)
	r.queued += len(e.Key) + len(e.Value)
}

// entryBytes counts the bytes of keys and values of es.
func entryBytes(es []sessions.Entry) int {
	n := 0
	for _, e := range es {
		n += len(e.Key) + len(e.Value)
	}
	return n
}

// Full reports whether the records queued for the next Flush have reached
// SpillBytes: the caller should Flush before it records more, so that a
// busy store does not make them pile up in memory.
func (r *Recorder) Full() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queued >= SpillBytes
}

// keepSession marks the session kept and queues the session row and the
// held records, oldest first. The prune that must come before them runs at
// the next Flush, once the store is open.
func (r *Recorder) keepSession() {
	r.kept = true
	r.needPrune = r.keep > 0
	r.stats.SessionsKept = 1
	r.queueSession()
	r.appendHeld()
	r.held.Reset()
}

// queueSession queues the session row as it is now.
func (r *Recorder) queueSession() {
	s := r.start.Load()
	if s == nil {
		s = r.startSession(r.now())
	}
	v, err := r.row(s).MarshalCBOR()
	if err != nil {
		// A session row holds only strings, integers and attribute values,
		// which always encode; should one not, the records still go out.
		r.stats.WriteErrors++
		return
	}
	r.queue(sessions.Entry{Key: keys.Session(uint64(s.id)), Value: v})
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
// the store (and pruning it) first if the session was just kept. A store
// that shares its database (BusyStore) waits for it until ctx ends, then
// spools what it could not write — at once, without waiting, when the
// batch holds SpillBytes or more; any other store is written as it is. On
// error the batch stays queued and the next Flush tries again; writing an
// entry twice is harmless, since its key is its stamp. Flush holds no lock
// that Record, Label or Stamp need while it does I/O.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	return r.flush(ctx, true)
}

// flush runs with r.flushing held, so one flush at a time owns r.store and
// r.needPrune. Without wait, a busy store is tried once and the batch
// spooled.
func (r *Recorder) flush(ctx context.Context, wait bool) error {
	r.mu.Lock()
	batch, arena := r.batch, r.arena
	if len(batch) == 0 {
		r.mu.Unlock()
		return nil
	}
	r.batch, r.arena, r.queued = r.spareBatch, r.spareArena, 0
	r.spareBatch, r.spareArena = nil, nil
	needPrune := r.needPrune
	r.mu.Unlock()
	spooled, err := r.write(ctx, batch, needPrune, wait)
	r.mu.Lock()
	if err != nil {
		r.stats.WriteErrors++
		// Put the batch back in front of whatever was queued meanwhile, so
		// order is kept when the next Flush writes it.
		r.batch = append(batch, r.batch...)
		r.queued = entryBytes(r.batch)
		r.mu.Unlock()
		return err
	}
	r.needPrune = false
	// The store writes in order: what it spooled is the batch's tail.
	r.stats.Written += int64(records(batch[:len(batch)-spooled]))
	r.stats.Spooled += int64(records(batch[len(batch)-spooled:]))
	r.mu.Unlock()
	if r.bound != nil {
		r.keepWithin(batch)
	}
	r.spare(batch, arena)
	return nil
}

// The largest batch and arena a Recorder keeps for reuse once written:
// what a busy second of a steady session takes, so that a session
// writing at its pace allocates nothing for its batches, and a burst's
// large arrays go once written.
const (
	maxSpareEntries = 16 << 10
	maxSpareArena   = 4 << 20
)

// spare keeps a written batch and its arena, emptied, for the next batch.
func (r *Recorder) spare(batch []sessions.Entry, arena []byte) {
	if cap(batch) > maxSpareEntries || cap(arena) > maxSpareArena {
		return
	}
	clear(batch) // let go of the session rows' keys and values
	r.mu.Lock()
	r.spareBatch, r.spareArena = batch[:0], arena[:0]
	r.mu.Unlock()
}

// keepWithin counts what a flush wrote against MaxBytes and deletes what
// the bound says must go. It runs under flushing, after the write; what it
// cannot delete now (a store busy with another process, say) it deletes at
// a later flush, when the store is still over.
func (r *Recorder) keepWithin(written []sessions.Entry) {
	r.bound.count(written)
	own := uint64(r.start.Load().id)
	var err error
	if r.bound.stale() {
		err = r.bound.measure(r.store, own)
	}
	var done trimmed
	if err == nil {
		done, err = r.bound.trim(r.store, own, written)
	}
	r.mu.Lock()
	r.stats.TrimmedSessions += int64(done.sessions)
	r.stats.TrimmedRecords += int64(done.records)
	r.stats.StoreBytes = r.bound.total()
	r.mu.Unlock()
	if r.report == nil {
		return
	}
	if done.sessions+done.records > 0 {
		r.report("max bytes", fmt.Errorf("otelrecords: the store passed its bound of %d bytes: deleted %d older sessions and %d of this session's oldest records (see Stats().TrimmedSessions, TrimmedRecords)",
			r.bound.max, done.sessions, done.records))
	}
	if err != nil {
		r.report("max bytes failed", fmt.Errorf("otelrecords: keeping the store within %d bytes: %w (tried again at the next write)", r.bound.max, err))
	}
}

// records counts the entries that are records, not session rows.
func records(es []sessions.Entry) int {
	n := 0
	for _, e := range es {
		if !keys.IsSession(e.Key) {
			n++
		}
	}
	return n
}

func (r *Recorder) write(ctx context.Context, batch []sessions.Entry, needPrune, wait bool) (spooled int, err error) {
	if r.store == nil {
		if r.open == nil {
			return 0, errors.New("otelrecords: no store to write to")
		}
		st, err := r.open()
		if err != nil {
			return 0, err
		}
		r.mu.Lock()
		r.store = st
		r.stats.StoreOpens++
		r.mu.Unlock()
	}
	if needPrune {
		// The session's own row is written after the prune, so keeping the
		// newest keep-1 sessions in the store keeps keep-1 others.
		if _, err := sessions.NewRecords(r.store).Prune(r.keep - 1); err != nil {
			return 0, fmt.Errorf("otelrecords: prune before keeping the session: %w", err)
		}
		r.mu.Lock()
		r.needPrune = false
		r.mu.Unlock()
	}
	if r.bound != nil && !r.bound.measured {
		// After the prune, before this session's first write: what the
		// store holds of the others, this session's bytes counted as it
		// writes them.
		if err := r.bound.measure(r.store, uint64(r.start.Load().id)); err != nil {
			return 0, err
		}
	}
	if bs, ok := r.store.(BusyStore); ok {
		if !wait || entryBytes(batch) >= SpillBytes {
			// So many records do not wait in memory for a busy store, nor
			// do a closing Recorder's: one try, then the spool.
			done, cancel := context.WithCancel(ctx)
			cancel()
			ctx = done
		}
		return bs.WriteContext(ctx, batch)
	}
	return 0, r.store.Write(batch)
}

// Close flushes and closes the store (if it was ever opened), within ctx.
// A BusyStore another process holds is not waited for: what it does not
// take at once goes to its spool, for the next opener to merge.
// Records given after Close are refused with ErrClosed. Calls after the
// first return nil.
func (r *Recorder) Close(ctx context.Context) error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.held.Reset()
	r.mu.Unlock()
	// The store is tried once: if another process holds it, the records go
	// to the spool at once, so that they are safe whatever ctx leaves for
	// the wait (issue 11.7: waiting first, a large backlog was still being
	// spooled when the deadline came), and the next opener merges them.
	err := r.flush(ctx, false)
	if err != nil {
		err = r.spool(err)
	}
	if r.store != nil {
		if bs, ok := r.store.(BusyStore); ok {
			err = errors.Join(err, bs.CloseContext(ctx))
		} else {
			err = errors.Join(err, r.store.Close())
		}
	}
	return err
}

// spooler is implemented by a store that can set entries aside for a later
// opener to write (sharedstore.Writer): Close's last resort for records a
// store refused for another reason than being busy (a full disk), which
// would otherwise be lost with the process.
type spooler interface {
	Spool(entries []sessions.Entry) error
}

// spool sets the unwritten batch aside after the final flush failed with
// cause; it returns nil if the records are safe in the spool.
func (r *Recorder) spool(cause error) error {
	sp, ok := r.store.(spooler)
	if !ok {
		return cause
	}
	r.mu.Lock()
	batch := r.batch
	r.mu.Unlock()
	if err := sp.Spool(batch); err != nil {
		return errors.Join(cause, err)
	}
	r.mu.Lock()
	r.batch, r.queued = nil, 0
	r.stats.Spooled += int64(records(batch))
	r.mu.Unlock()
	return nil
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

// Stats returns the recorder's counters.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	if bs, ok := r.store.(BusyStore); ok {
		ss := bs.StoreStats()
		s.StoreOpens, s.BusyWaits = ss.Opens, ss.BusyWaits
	}
	s.Held = int64(r.held.Len())
	s.HeldBytes = int64(r.held.Counted())
	for _, e := range r.batch {
		if !keys.IsSession(e.Key) {
			s.Pending++
		}
	}
	return s
}

// holdRecord holds a record of a session not kept yet. Its payload is its
// seq, its kind's length and kind, then its value; its key is rebuilt from
// them when the session is kept. It counts what it will take in the store,
// namespace + key + value bytes: the key is at least 20 bytes longer than
// the payload's seq and kind, more than the buffer's 8-byte header, so the
// buffer never needs more than the budget (package hold): a session that
// never changes anything holds its budget and little else (BENCHMARKS.md,
// figure 3). No kind is interned: a program whose kinds vary
// (compile/<hash>) holds nothing for kinds it no longer records.
func (r *Recorder) holdRecord(kind string, st sessions.Stamp, value []byte) (dropped int) {
	var pre [9]byte
	binary.BigEndian.PutUint64(pre[:8], st.Seq)
	pre[8] = byte(len(kind)) // at most keys.MaxKindLen, 128
	return r.held.Hold(struct{}{}, keys.Size(kind)+len(value), pre[:], []byte(kind), value)
}

// appendHeld queues the held records, oldest first, as entries to write:
// keys rebuilt, values copied out of the buffer into the arena; r.mu is
// held.
func (r *Recorder) appendHeld() {
	if r.held.Len() == 0 {
		return
	}
	id := uint64(r.start.Load().id)
	r.held.Each(func(_ struct{}, p []byte) {
		seq, n := binary.BigEndian.Uint64(p), int(p[8])
		kind, value := p[9:9+n], p[9+n:]
		r.queueRecord(string(kind), id, seq, value) // once, at the keep

	})
}
