package recorder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

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

// Flush writes every queued record and session row in one batch, opening
// the store (and pruning it) first if the session was just kept. A store
// that shares its database (BusyStore) waits for it until ctx ends, then
// spools what it could not write — at once, without waiting, when the
// batch holds SpillBytes or more; any other store is written as it is. On
// error the batch stays queued and the next Flush tries again; writing an
// entry twice is harmless, since its key is its stamp — until SpillBytes
// of records wait: then they are spooled, or the oldest dropped (shed).
// Flush holds no lock
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
	r.queueTallyDue(!wait)
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
		if r.fill != nil {
			// Before the shed spools them or another flush hands them on:
			// a failed write may have used up what a value stood for (the
			// Collector's note of a span it handed on, Config.Fill).
			for i := range r.batch {
				r.fill(&r.batch[i])
			}
		}
		r.queued = entryBytes(r.batch)
		r.mu.Unlock()
		r.shed(err)
		return err
	}
	r.wrote()
	// The store writes in order: what it spooled is the batch's tail.
	r.stats.Written += int64(records(batch[:len(batch)-spooled]))
	r.stats.Spooled += int64(records(batch[len(batch)-spooled:]))
	r.mu.Unlock()
	if r.bound != nil {
		r.keepWithin(ctx, batch)
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

// spare keeps a written batch and its arena, emptied, for the next batch:
// the Recorder's own, or for an imported session, in a pool every
// imported session shares (a gateway holds thousands of sessions, and
// one array each between their writes would be memory held for nothing,
// but a fresh array for each write costs the gateway its growth and
// collection on every batch).
func (r *Recorder) spare(batch []sessions.Entry, arena []byte) {
	if cap(batch) > maxSpareEntries || cap(arena) > maxSpareArena {
		return
	}
	clear(batch) // let go of the session rows' keys and values
	if r.imported {
		lastSpare.entries.Store(int64(cap(batch)))
		lastSpare.arena.Store(int64(cap(arena)))
		importedSpares.Put(&spareBufs{batch[:0], arena[:0]})
		return
	}
	r.mu.Lock()
	r.spareBatch, r.spareArena = batch[:0], arena[:0]
	r.mu.Unlock()
}

// spareBufs is an emptied batch and arena, pooled for imported sessions.
type spareBufs struct {
	batch []sessions.Entry
	arena []byte
}

// importedSpares pools the written batches of imported sessions; the
// garbage collector empties it when they go unused.
var importedSpares sync.Pool

// lastSpare is the room of the batch and arena an imported session gave
// back last. The pool often has none to give: sync.Pool hands what a P
// put back to that P first, and a gateway's requests move between Ps, so
// that another P's Get misses while the arena waits in the first's slot.
// takeSpare then makes one of that room at once, rather than one that
// grows from nothing, copying itself at every doubling, within a quarter
// of the largest spare (what one large request needs, not a burst).
var lastSpare struct{ entries, arena atomic.Int64 }

// takeSpare gives an imported session whose arena is empty a pooled batch
// and arena to queue into; r.mu is held.
func (r *Recorder) takeSpare() {
	if !r.imported || cap(r.arena) > 0 {
		return
	}
	b, ok := importedSpares.Get().(*spareBufs)
	if !ok {
		b = &spareBufs{make([]sessions.Entry, 0, min(lastSpare.entries.Load(), maxSpareEntries/4)),
			make([]byte, 0, min(lastSpare.arena.Load(), maxSpareArena/4))}
	}
	// A session row may be queued already: it is not in the arena.
	r.batch, r.arena = append(b.batch, r.batch...), b.arena
}

// keepWithin counts what a flush wrote against MaxBytes and deletes what
// the bound says must go, waiting its turn for a busy store until ctx
// ends. It runs under flushing, after the write; what it cannot delete
// now (a store another process holds past ctx, say) it deletes at a later
// flush, when the store is still over.
func (r *Recorder) keepWithin(ctx context.Context, written []sessions.Entry) {
	r.bound.count(written)
	own := uint64(r.start.Load().id)
	var done trimmed
	var err error
	if measure := !r.bound.measured || r.bound.stale(); measure || r.bound.total() > r.bound.max {
		// Only then is the store needed: a flush within the bound does
		// not wait for a store another process holds.
		err = r.onStore(ctx, func(st sessions.Store) error {
			if measure {
				if err := r.bound.measure(st, own); err != nil {
					return err
				}
			}
			var err error
			done, err = r.bound.trim(st, own, written)
			return err
		})
	}
	if turnMissed(ctx, err) {
		// Another process held the store: waiting is not failing, and
		// the next write measures and trims again.
		err = nil
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

// records counts the entries that are records: not session rows, nor
// the entries an Importer writes beside them (QueueEntry).
func records(es []sessions.Entry) int {
	n := 0
	for _, e := range es {
		if keys.IsRecord(e.Key) {
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
	bs, busy := r.store.(BusyStore)
	if (busy || r.sink != nil) && (!wait || entryBytes(batch) >= SpillBytes) {
		// So many records do not wait in memory for a busy store, nor do
		// a closing Recorder's: one try, then the spool; the prune too.
		done, cancel := context.WithCancel(ctx)
		cancel()
		ctx = done
	}
	if needPrune {
		// The session's own row is written after the prune, so keeping the
		// newest keep-1 sessions in the store keeps keep-1 others.
		err := r.onStore(ctx, func(st sessions.Store) error {
			_, err := sessions.NewRecords(st).Prune(r.keep - 1)
			return err
		})
		switch {
		case turnMissed(ctx, err):
			// Another process held the store until ctx ended: waiting is
			// not failing. The prune runs at the next write; the records
			// go to the spool now.
		case err != nil:
			return 0, fmt.Errorf("otelrecords: prune before keeping the session: %w", err)
		default:
			r.mu.Lock()
			r.needPrune = false
			r.mu.Unlock()
		}
	}
	if r.bound != nil && !r.bound.measured {
		// After the prune, before this session's first write: what the
		// store holds of the others, this session's bytes counted as it
		// writes them.
		own := uint64(r.start.Load().id)
		err := r.onStore(ctx, func(st sessions.Store) error { return r.bound.measure(st, own) })
		if err != nil && !turnMissed(ctx, err) {
			return 0, err
		}
	}
	switch {
	case r.sink != nil:
		return r.sink.Take(ctx, batch)
	case busy:
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
	r.dropHeldTraces()  // counted in the tally, which Close's flush writes
	r.traces = traces{} // undecided traces changed nothing: they go
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
	r.stats.SpooledUnwritable += int64(records(batch))
	r.mu.Unlock()
	return nil
}
