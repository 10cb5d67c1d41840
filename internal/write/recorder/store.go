package recorder

import (
	"context"
	"errors"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// BusyStore is a Store that shares its database with other processes and
// owns the waiting that sharing takes: a write waits for the database
// while another process holds it (asking the holder to yield, retrying
// with backoff), and once its context ends first sets the entries aside
// in the store's spool, which the next opener merges. So the Recorder,
// and the exporter above it, know nothing of locks: they write with a
// context and hear only of what could not be made durable at all.
type BusyStore interface {
	sessions.Store
	// WriteContext makes the entries durable, in order: in the database,
	// or — when ctx ends before the database is free — in the spool. It
	// returns how many entries went to the spool, and an error only when
	// some entries are durable in neither (a full disk, a directory that
	// cannot be created); writing them again is harmless.
	WriteContext(ctx context.Context, entries []sessions.Entry) (spooled int, err error)
	// Hold runs fn on the database, waiting its turn as WriteContext
	// does; when ctx ends first it returns an error matching ctx's error
	// (errors.Is), and fn does not run.
	Hold(ctx context.Context, fn func(sessions.Store) error) error
	// CloseContext lets the database go, waiting at most until ctx ends
	// for operations in flight. Later operations fail with
	// sessions.ErrClosed.
	CloseContext(ctx context.Context) error
	// StoreStats counts how the store shared its database.
	StoreStats() StoreStats
}

// A Sink is the one output of a Recorder for what it wrote: each batch of
// entries (records, session rows, what an Importer queued beside them),
// in order, as the Recorder would write them to its store. It makes them
// durable, hands them on, or both — the store's writer, or the Collector's
// records processor that hands kept spans down its pipeline and keeps
// only its own entries — so that nothing posing as a store stands
// between the Recorder and what takes its writes. It returns how many of
// the entries, the batch's tail, went to a spool, and an error when some
// are neither taken nor spooled: the batch stays queued and is given
// again (entries are keyed by their stamps, so taking one twice is
// harmless). ctx has ended already when the Recorder wants one try and no
// wait (a batch of SpillBytes, the last flush at Close). The entries are
// valid only during the call.
type Sink interface {
	Take(ctx context.Context, entries []sessions.Entry) (spooled int, err error)
}

// StoreStats counts how a BusyStore shared its database with other
// processes: waiting is normal operation, not an error.
type StoreStats struct {
	// Opens is how many times the database was opened.
	Opens int64
	// BusyWaits is how many times a write found the database held by
	// another process and waited for it.
	BusyWaits int64
	// Spooled is how many entries were set aside in the spool because the
	// database stayed busy past a write's deadline.
	Spooled int64
	// FirstSpoolWait is how long the first write that spooled entries had
	// waited for the database before it did: what a report of the
	// spooling states, rather than the longest wait it might have been.
	FirstSpoolWait time.Duration
}

// onStore runs fn on the Recorder's store: through Hold on a BusyStore,
// waiting its turn until ctx ends, so that the prune and the byte bound
// wait like any write; on any other store at once.
func (r *Recorder) onStore(ctx context.Context, fn func(sessions.Store) error) error {
	if bs, ok := r.store.(BusyStore); ok {
		return bs.Hold(ctx, fn)
	}
	return fn(r.store)
}

// turnMissed reports whether err says that ctx ended while another
// process held the store: a wait cut short, not a failure.
func turnMissed(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
}
