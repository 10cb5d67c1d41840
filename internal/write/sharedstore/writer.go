package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/backoff"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/store/turns"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

const (
	// IdleRelease is how long a Writer keeps the store open after its last
	// use: long enough that a burst of writes opens it once (a read-write
	// open costs about 20 ms), short enough that a process gone quiet
	// keeps no one out for long.
	IdleRelease = 500 * time.Millisecond
	// YieldGap is how long a Writer that let the store go for a waiting
	// opener stays away before opening it again: about what a reader
	// needs to get in, read and let go.
	YieldGap = 250 * time.Millisecond
)

// minRetry and maxRetry bound the interval at which WriteContext retries a
// busy store: about ten times a second, while the entries wait.
const (
	minRetry = 10 * time.Millisecond
	maxRetry = 200 * time.Millisecond
)

// Writer is the recorder.BusyStore on a Badger store that other processes
// share (see the package comment). Creating one touches nothing on disk.
// It is safe for concurrent use.
type Writer struct {
	dir    string
	opts   []badgerstore.Option
	handle func(error)
	token  string // names this Writer in the waiting marker

	mu       sync.Mutex
	idle     time.Duration
	st       *badgerstore.Store // the open store; nil while let go
	turning  chan struct{}      // while st is opened or closed outside mu; closed after
	users    int                // operations using st now; it is let go only at 0
	openedAt time.Time
	lastUse  time.Time
	away     time.Time // after yielding, do not open before this
	timer    *time.Timer
	closed   bool
	stats    recorder.StoreStats
	asked    bool // this Writer's request for the store may be waiting
}

var _ recorder.BusyStore = (*Writer)(nil)

// New returns a Writer for the store in dir, the store's directory as
// badgerstore.Place returned it: the Writer opens the store there, and
// leaves its requests for the store and its spool there, where the store's
// holder and its next opener look, and nowhere else. handle receives Badger's
// warnings and errors (badgerstore.WithErrorHandler), a spool file that
// does not decode, and a failure to let the store go; it must be safe for
// concurrent use. A nil handle logs them to slog.Default() at warn level,
// as badgerstore does by default. opts are passed to every
// badgerstore.Open, after the error handler.
func New(dir string, handle func(error), opts ...badgerstore.Option) *Writer {
	if handle == nil {
		handle = func(err error) { slog.Default().Warn(err.Error()) }
	}
	return &Writer{
		dir:    dir,
		opts:   append([]badgerstore.Option{badgerstore.WithErrorHandler(handle)}, opts...),
		handle: handle,
		token:  turns.WriterToken(),
		idle:   IdleRelease,
	}
}

// use returns the open store, opening it if needed, and counts one more
// user of it; every use that returns a store is paired with done. It does
// not wait for another process: a busy store is an error matching
// badgerstore.ErrLocked, after asking its holder to yield.
func (w *Writer) use() (*badgerstore.Store, error) {
	w.mu.Lock()
	for w.turning != nil {
		// An open or a close of this Writer's store is under way: wait for
		// it rather than race it for Badger's lock.
		ch := w.turning
		w.mu.Unlock()
		<-ch
		w.mu.Lock()
	}
	switch {
	case w.closed:
		w.mu.Unlock()
		return nil, sessions.ErrClosed
	case w.st != nil:
		w.users++
		st := w.st
		w.mu.Unlock()
		return st, nil
	}
	if wait := time.Until(w.away); wait > 0 {
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: %s: yielding to another process for %v", badgerstore.ErrLocked, w.dir, wait.Round(time.Millisecond))
	}
	done := w.turn()
	w.mu.Unlock()

	st, err := badgerstore.Open(w.dir, w.opts...)
	switch {
	case errors.Is(err, badgerstore.ErrLocked):
		w.ask()
	case err == nil:
		// Its turn came: the request it may have left is answered.
		w.withdraw()
	}

	w.mu.Lock()
	if err == nil && w.closed {
		// Closed while it opened: let it go before the Close waiting on
		// this turn returns.
		w.mu.Unlock()
		w.report(st.Close())
		w.mu.Lock()
		err = sessions.ErrClosed
	}
	if err == nil {
		w.st, w.openedAt = st, time.Now()
		w.stats.Opens++
		w.users++
	}
	done()
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return st, nil
}

// ask leaves this Writer's request for the store in its directory.
func (w *Writer) ask() {
	turns.Ask(w.dir, w.token)
	w.mu.Lock()
	w.asked = true
	w.mu.Unlock()
}

// withdraw takes back the request this Writer left, if any.
func (w *Writer) withdraw() {
	w.mu.Lock()
	asked := w.asked
	w.asked = false
	w.mu.Unlock()
	if asked {
		turns.Withdraw(w.dir, w.token)
	}
}

// turn marks the store as being opened or closed outside mu, which must
// be held, and returns the func that ends the turn, called with mu held.
func (w *Writer) turn() (done func()) {
	ch := make(chan struct{})
	w.turning = ch
	return func() {
		w.turning = nil
		close(ch)
	}
}

// done ends a use of st, and lets the store go at once if another opener
// asked for it, or else after the idle spell. The marker is read outside
// the lock: a slow disk must not hold up the other users.
func (w *Writer) done(st *badgerstore.Store) {
	w.mu.Lock()
	w.users--
	w.lastUse = time.Now()
	if w.st != st || w.users > 0 || w.closed {
		w.mu.Unlock()
		return
	}
	since := w.openedAt
	w.mu.Unlock()

	if turns.Asked(w.dir, w.token, since) {
		w.letGo(st, releaseYield)
		return
	}
	w.mu.Lock()
	if !w.closed {
		if w.timer == nil {
			w.timer = time.AfterFunc(w.idle, w.releaseIfIdle)
		} else {
			w.timer.Reset(w.idle)
		}
	}
	w.mu.Unlock()
}

// releaseIfIdle lets the store go when it has not been used for the idle
// spell.
func (w *Writer) releaseIfIdle() {
	w.mu.Lock()
	st := w.st
	w.mu.Unlock()
	if st != nil {
		w.letGo(st, releaseIdle)
	}
}

// How letGo lets the store go.
type release int

const (
	releaseIdle  release = iota // once idle for the idle spell
	releaseYield                // at once, and stay away for YieldGap
	releaseNow                  // at once (a full disk), and open again when asked
)

// letGo closes st if it is still the open store and nothing uses it: at
// once when yielding to another opener (and then stays away for
// YieldGap) or for a full disk, else once it has been idle for the idle
// spell. Badger's close (which flushes its memtable) runs outside the
// lock.
func (w *Writer) letGo(st *badgerstore.Store, how release) {
	w.mu.Lock()
	if w.st != st || w.users > 0 || w.turning != nil || (how == releaseIdle && time.Since(w.lastUse) < w.idle) {
		w.mu.Unlock()
		return
	}
	w.st = nil
	if how == releaseYield {
		w.away = time.Now().Add(YieldGap)
	}
	done := w.turn()
	w.mu.Unlock()

	w.report(st.Close())

	w.mu.Lock()
	done()
	w.mu.Unlock()
}

// report hands a failure to let the store go to the error handler.
func (w *Writer) report(err error) {
	if err != nil {
		w.handle(fmt.Errorf("otelrecords: let the store go: %w", err))
	}
}

// write writes entries once, opening the store if needed, and counts a
// busy wait when another process holds the store.
func (w *Writer) write(entries []sessions.Entry) error {
	st, err := w.use()
	if err != nil {
		return err
	}
	err = st.Write(entries)
	w.done(st)
	if errors.Is(err, badgerstore.ErrNoSpace) {
		// Let Badger go while its reserve still holds what its close
		// flushes: the spool may take the rest of the disk (recorder's
		// shed), and the memtables Badger holds need room to flush, which
		// the reserve keeps for them (internal/store/space). The next
		// write opens it again, which badgerstore.Open refuses, touching
		// nothing, until there is room.
		w.letGo(st, releaseNow)
	}
	return err
}

// Write writes the entries, opening the store if needed (creating it). It
// does not wait for a busy store: while another process holds it, Write
// asks the holder to yield and fails at once with an error matching
// badgerstore.ErrLocked, and the caller keeps the entries and tries again.
// A wait needs a bound and a way to be cut short, which only the caller
// has: WriteContext is the write that waits.
func (w *Writer) Write(entries []sessions.Entry) error {
	if len(entries) == 0 {
		return w.closedErr()
	}
	err := w.write(entries)
	if errors.Is(err, badgerstore.ErrLocked) {
		w.count(func(s *recorder.StoreStats) { s.BusyWaits++ })
	}
	return err
}

// WriteContext writes the entries, waiting while another process holds
// the store: it asks the holder to yield and retries with jittered
// backoff (10 to 200 ms). When ctx ends first, it sets the entries aside
// in the spool for the next opener to merge, and returns how many it
// spooled; only when the spool would not take them either does it return
// an error. A ctx with a deadline is waited for until SpoolTime(entries)
// before it, so that the entries are in the spool by the deadline, not
// after it: a caller that leaves when its deadline comes (a Shutdown, a
// process exiting) leaves nothing behind in memory. Any other failure (a
// full disk, a path that is a file, a corrupt store) returns at once,
// spooling nothing: the caller keeps the entries and tries again, and
// decides when they have waited long enough to go to the spool (Spool;
// the Recorder does at recorder.SpillBytes). A full disk lets the store go
// first (write).
func (w *Writer) WriteContext(ctx context.Context, entries []sessions.Entry) (spooled int, err error) {
	if len(entries) == 0 {
		return 0, w.closedErr()
	}
	wait := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, deadline.Add(-SpoolTime(entries)))
		defer cancel()
	}
	waited, err := w.waitTurn(wait, func() error { return w.write(entries) })
	if !errors.Is(err, badgerstore.ErrLocked) || wait.Err() == nil {
		return 0, err
	}
	n, err := w.spill(entries, err)
	if n > 0 {
		w.count(func(s *recorder.StoreStats) {
			if s.FirstSpoolWait == 0 {
				s.FirstSpoolWait = max(waited, time.Nanosecond)
			}
		})
	}
	return n, err
}

// waitTurn calls try until it does not fail for a busy store, or ctx
// ends: it asks the holder to yield (use does) and retries with jittered
// backoff (10 to 200 ms), counting one busy wait. It returns how long it
// waited, and try's last error — matching badgerstore.ErrLocked when ctx
// ended first, after it withdrew its request.
func (w *Writer) waitTurn(ctx context.Context, try func() error) (time.Duration, error) {
	b := backoff.Backoff{Min: minRetry, Max: maxRetry}
	began := time.Now()
	for waited := false; ; waited = true {
		err := try()
		if !errors.Is(err, badgerstore.ErrLocked) {
			return time.Since(began), err
		}
		if !waited {
			w.count(func(s *recorder.StoreStats) { s.BusyWaits++ })
		}
		if b.Wait(ctx) != nil {
			w.withdraw() // it no longer waits
			return time.Since(began), err
		}
	}
}

// Hold runs fn on the store, opened for it (created if need be) and kept
// open until fn returns, waiting its turn as WriteContext does while
// another process holds it: the prune and the byte bound that keeping a
// session runs wait like any write, rather than fail. When ctx ends
// first it returns an error matching badgerstore.ErrLocked and ctx's
// error, saying how long it waited; other failures return at once.
func (w *Writer) Hold(ctx context.Context, fn func(sessions.Store) error) error {
	var ran bool
	var fnErr error
	waited, err := w.waitTurn(ctx, func() error {
		st, err := w.use()
		if err != nil {
			return err
		}
		defer w.done(st)
		ran, fnErr = true, fn(st)
		return nil
	})
	switch {
	case ran:
		return fnErr
	case errors.Is(err, badgerstore.ErrLocked) && ctx.Err() != nil:
		return fmt.Errorf("%w after waiting %v: %w", ctx.Err(), waited.Round(time.Millisecond), err)
	}
	return err
}

// What spooling takes, kept back from a deadline by WriteContext: a fixed
// part for creating, syncing and renaming the file, and the time to
// encode and write the entries at spoolRate. Measured (internal/store/spool
// BenchmarkWrite200k: 200,000 records, 47 MB): 0.5 to 0.8 s, 59 to 94
// MB/s, on 2 cores under a load of 10. spoolRate is a quarter of the
// slowest of those, because a deadline missed loses what was not spooled.
const (
	spoolFixed = 100 * time.Millisecond
	spoolRate  = 16 << 20 // bytes a second
)

// SpoolTime is how long WriteContext allows for spooling the entries:
// 100 ms, and a second for every 16 MiB of keys and values (about 70,000
// records of 200 bytes). A write whose deadline is nearer than that finds
// the store busy once and spools at once.
func SpoolTime(entries []sessions.Entry) time.Duration {
	n := 0
	for _, e := range entries {
		n += len(e.Key) + len(e.Value)
	}
	return spoolFixed + time.Duration(float64(n)/spoolRate*float64(time.Second))
}

// spill sets entries the busy store would not take (cause) aside in the
// spool.
func (w *Writer) spill(entries []sessions.Entry, cause error) (int, error) {
	if err := w.Spool(entries); err != nil {
		return 0, fmt.Errorf("%w; and %w", cause, err)
	}
	return len(entries), nil
}

// Spool sets entries aside in the spool at once, without trying the
// store, and counts them in StoreStats. It is for a caller that gave up on
// writing them to a store that fails writes (a full disk): the Recorder
// does, once recorder.SpillBytes of them wait or at its Close. A busy
// store's entries WriteContext spools by itself.
func (w *Writer) Spool(entries []sessions.Entry) error {
	if err := spool.Write(w.dir, entries); err != nil {
		return err
	}
	w.count(func(s *recorder.StoreStats) { s.Spooled += int64(len(entries)) })
	return nil
}

// closedErr is sessions.ErrClosed after Close, else nil.
func (w *Writer) closedErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return sessions.ErrClosed
	}
	return nil
}

func (w *Writer) count(f func(*recorder.StoreStats)) {
	w.mu.Lock()
	f(&w.stats)
	w.mu.Unlock()
}

// StoreStats counts how the Writer shared the store: its opens, the
// writes that found it busy, and the entries it spooled.
func (w *Writer) StoreStats() recorder.StoreStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Scan opens the store if needed and scans it; the store stays open until
// the scan ends. Like Write it does not wait for a busy store.
func (w *Writer) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		st, err := w.use()
		if err != nil {
			yield(sessions.Entry{}, err)
			return
		}
		defer w.done(st)
		for e, err := range st.Scan(start, end) {
			if !yield(e, err) {
				return
			}
		}
	}
}

// DeleteRange opens the store if needed and deletes the matching keys.
// Like Write it does not wait for a busy store.
func (w *Writer) DeleteRange(start, end []byte, match func([]byte) bool) (int, error) {
	st, err := w.use()
	if err != nil {
		return 0, err
	}
	defer w.done(st)
	return st.DeleteRange(start, end, match)
}

// Close lets the store go, waiting for the operations in flight (a Scan
// ends at its next entry; Close must not be called from a Scan's loop
// body). Later operations fail with sessions.ErrClosed.
func (w *Writer) Close() error { return w.CloseContext(context.Background()) }

// CloseContext lets the store go, waiting at most until ctx ends for the
// operations in flight, and for an open or a release of the store under
// way. When ctx ends first it returns ctx's error, and the store is let go
// in the background once they end. Later operations fail with
// sessions.ErrClosed; calls after the first return nil.
func (w *Writer) CloseContext(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	st, turning := w.st, w.turning
	w.st = nil
	w.mu.Unlock()
	if st == nil && turning == nil {
		return nil
	}

	closed := make(chan error, 1)
	go func() {
		if turning != nil {
			// An open under way closes what it opened when it sees
			// closed; a release under way closes the store itself.
			<-turning
		}
		var err error
		if st != nil {
			err = st.Close()
		}
		closed <- err
	}()
	select {
	case err := <-closed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("otelrecords: close store %s: %w", w.dir, ctx.Err())
	}
}
