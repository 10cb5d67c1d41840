package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/otelrecords/otelrecords/internal/backoff"
	"github.com/otelrecords/otelrecords/internal/spool"
	"github.com/otelrecords/otelrecords/internal/turns"
)

// Badger lets one process at a time open a directory, yet several processes
// share a store over time: a build, a server, the command that reads them.
// A writer opens the store only to write and lets it go when idle, or at
// once when someone waits for it (internal/sharedstore); a reader waits
// here. An opener that finds the store busy leaves its pid in a small
// marker file beside the data (internal/turns), which asks the holder to
// let it go, and retries with jittered backoff; it gets in within about
// one write of a busy writer.
const (
	// minBackoff and maxBackoff bound the retry interval of a busy open.
	minBackoff = 5 * time.Millisecond
	maxBackoff = 100 * time.Millisecond
)

// OpenWait opens the store in dir like Open, but waits while another
// process holds it, until ctx ends: it asks the holder to yield and
// retries with jittered backoff, calling onWait (if not nil) once, when it
// first finds the store busy, so a command can say that it waits. A read-only open of a store whose writer crashed recovers it
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
