package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/internal/backoff"
	"github.com/otelrecords/otelrecords/internal/spool"
	"github.com/otelrecords/otelrecords/internal/turns"
	"github.com/otelrecords/otelrecords/sessions"
)

// Badger lets one process at a time open a directory, yet several processes
// share a store over time: a build, a server, the command that reads them.
// Shared and OpenWait are how they take turns.
//
// A writer (Shared) opens the store only to write, and lets it go after an
// idle spell, so a long-running process that has gone quiet keeps no one
// out. An opener that finds the store busy leaves its pid in a small
// marker file beside the data (internal/turns) and retries with jittered backoff;
// a writer that sees a fresh marker from another process lets the store go
// after its current write and stays away for a moment (yieldGap), so a
// reader gets in within about one write even while the writer is busy.
const (
	// DefaultIdleRelease is how long a Shared store stays open after its
	// last use.
	DefaultIdleRelease = 500 * time.Millisecond
	// yieldGap is how long a writer that let the store go for a waiting
	// process stays away before opening it again.
	yieldGap = 250 * time.Millisecond
	// minBackoff and maxBackoff bound the retry interval of a busy open.
	minBackoff = 5 * time.Millisecond
	maxBackoff = 100 * time.Millisecond
)

// Shared is a sessions.Store for a writer that shares its directory with
// other processes: it opens the Badger store on first use (creating it),
// lets it go after DefaultIdleRelease without use, or at once when another
// process waits for it, and merges the spool when it opens. Creating a
// Shared touches nothing on disk.
//
// Its operations do not wait for a busy store: they fail with an error
// matching ErrLocked, leave a marker asking the holder to yield, and the
// caller retries (the exporter does, with backoff, while records queue in
// memory). Spool sets entries aside when the store stays busy past a
// deadline. Shared is safe for concurrent use.
type Shared struct {
	dir    string
	opts   []Option
	idle   time.Duration
	handle func(error)

	mu       sync.Mutex
	st       *Store
	openedAt time.Time
	away     time.Time // do not reopen before this (after yielding)
	lastUse  time.Time
	timer    *time.Timer
	users    int // operations using st now; it is let go only at 0
	closed   bool
	opens    int
	waits    int
	token    string // names this Shared in the marker: pid and instance
}

// NewShared returns a Shared store for dir. opts are passed to every Open
// (WithErrorHandler, say); WithReadOnly makes no sense here and is ignored.
func NewShared(dir string, opts ...Option) *Shared {
	c := config{handle: defaultErrorHandler}
	for _, o := range opts {
		o(&c)
	}
	token := turns.WriterToken()
	return &Shared{dir: dir, opts: opts, idle: DefaultIdleRelease, handle: c.handle, token: token}
}

// SetIdleRelease sets how long the store stays open after its last use.
func (s *Shared) SetIdleRelease(d time.Duration) {
	s.mu.Lock()
	s.idle = d
	s.mu.Unlock()
}

// Dir returns the store directory.
func (s *Shared) Dir() string { return s.dir }

// Opens returns how many times the store was opened, and how many opens
// found it busy.
func (s *Shared) Opens() (opens, busy int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens, s.waits
}

// acquire returns the open store, opening it if needed; mu must be held.
func (s *Shared) acquire() (*Store, error) {
	if s.closed {
		return nil, sessions.ErrClosed
	}
	if s.st != nil {
		return s.st, nil
	}
	if wait := time.Until(s.away); wait > 0 {
		return nil, fmt.Errorf("%w: %s: yielding to another process for %v", ErrLocked, s.dir, wait.Round(time.Millisecond))
	}
	st, err := Open(s.dir, s.opts...)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			s.waits++
			turns.Ask(s.dir, s.token)
		}
		return nil, err
	}
	s.opens++
	s.st, s.openedAt = st, time.Now()
	return st, nil
}

// use opens the store if needed and counts one more user of it.
func (s *Shared) use() (*Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.acquire()
	if err == nil {
		s.users++
	}
	return st, err
}

// done ends a use, and decides whether to let the store go: at once if
// another process asked for it, else after the idle spell.
func (s *Shared) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	s.lastUse = time.Now()
	if s.st == nil || s.users > 0 {
		return
	}
	if turns.Asked(s.dir, s.token, s.openedAt) {
		s.releaseLocked()
		s.away = time.Now().Add(yieldGap)
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(s.idle, s.releaseIfIdle)
	} else {
		s.timer.Reset(s.idle)
	}
}

func (s *Shared) releaseIfIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil && s.users == 0 && time.Since(s.lastUse) >= s.idle {
		s.releaseLocked()
	}
}

func (s *Shared) releaseLocked() {
	if s.st == nil {
		return
	}
	if err := s.st.Close(); err != nil {
		s.handle(fmt.Errorf("otelrecords: release store %s: %w", s.dir, err))
	}
	s.st = nil
}

// Write opens the store if needed and writes the entries.
func (s *Shared) Write(entries []sessions.Entry) error {
	st, err := s.use()
	if err != nil {
		return err
	}
	defer s.done()
	return st.Write(entries)
}

// Scan opens the store if needed and scans it; the store stays open until
// the scan ends.
func (s *Shared) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		st, err := s.use()
		if err != nil {
			yield(sessions.Entry{}, err)
			return
		}
		defer s.done()
		for e, err := range st.Scan(start, end) {
			if !yield(e, err) {
				return
			}
		}
	}
}

// DeleteRange opens the store if needed and deletes the matching keys.
func (s *Shared) DeleteRange(start, end []byte, match func([]byte) bool) (int, error) {
	st, err := s.use()
	if err != nil {
		return 0, err
	}
	defer s.done()
	return st.DeleteRange(start, end, match)
}

// Spool sets entries aside in the store's spool, for the next opener to
// merge: what a writer does with acknowledged records when the store stays
// busy past its deadline.
func (s *Shared) Spool(entries []sessions.Entry) error { return spool.Write(s.dir, entries) }

// Close lets the store go. Later operations fail with sessions.ErrClosed.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	var err error
	if s.st != nil {
		// A Store's Close waits for its running operations.
		err = s.st.Close()
		s.st = nil
	}
	return err
}

// OpenWait opens the store in dir like Open, but waits while another
// process holds it, until ctx ends: it asks the holder to yield (see
// Shared) and retries with jittered backoff, calling onWait (if not nil)
// once, when it first finds the store busy, so a command can say that it
// waits. A read-only open of a store whose writer crashed recovers it
// first (a brief read-write open replays Badger's log), and a spool left
// by a writer is merged, so a reader sees every acknowledged record.
func OpenWait(ctx context.Context, dir string, onWait func(error), opts ...Option) (*Store, error) {
	c := config{handle: defaultErrorHandler}
	for _, o := range opts {
		o(&c)
	}
	b := backoff.Backoff{Min: minBackoff, Max: maxBackoff}
	waited := false
	for {
		st, err := openMerged(dir, c, opts)
		if err == nil || !errors.Is(err, ErrLocked) {
			return st, err
		}
		turns.Ask(dir, turns.ReaderToken())
		if !waited && onWait != nil {
			onWait(err)
		}
		waited = true
		if werr := b.Wait(ctx); werr != nil {
			return nil, fmt.Errorf("%w (gave up waiting: %w)", err, werr)
		}
	}
}

// openMerged opens dir, first recovering a crashed store and merging a
// spool when the open is read-only (a read-write open merges itself).
func openMerged(dir string, c config, opts []Option) (*Store, error) {
	if c.readOnly && spool.Has(dir) {
		if err := mergeWith(dir, opts); err != nil {
			return nil, err
		}
	}
	st, err := Open(dir, opts...)
	if c.readOnly && errors.Is(err, ErrNeedsRecovery) {
		if err := mergeWith(dir, opts); err != nil {
			return nil, err
		}
		st, err = Open(dir, opts...)
	}
	return st, err
}

// mergeWith opens the existing store in dir read-write, which replays a
// crashed writer's log and merges the spool, and closes it.
func mergeWith(dir string, opts []Option) error {
	rw := append(append([]Option(nil), opts...), func(c *config) { c.readOnly = false })
	st, err := Open(dir, rw...)
	if err != nil {
		return err
	}
	return st.Close()
}

var _ sessions.Store = (*Shared)(nil)
