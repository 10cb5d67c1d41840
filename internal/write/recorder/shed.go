package recorder

import (
	"errors"
	"fmt"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// shed bounds what a store that fails writes (a full disk, an I/O error, a
// read-only file system) leaves in memory, as a busy store's records are
// bounded: once SpillBytes of records wait, they go to the store's spool,
// for the next opener to merge; if the spool will not take them either
// (its disk is full too, or it cannot be created), the oldest records are
// dropped until half of SpillBytes is left, counted in Stats.Unwritable
// and reported once per failing streak, with the number and the cause.
// Session rows are never dropped: they are small, and without its row a
// session's records are not found. It runs under flushing, after a write
// failed with cause; what Record queues meanwhile stays behind what it
// sheds.
func (r *Recorder) shed(cause error) {
	r.mu.Lock()
	batch := r.batch
	over := r.queued >= SpillBytes
	r.mu.Unlock()
	if !over {
		return
	}
	spoolErr := errors.New("the store cannot set records aside")
	if sp, ok := r.store.(spooler); ok {
		if spoolErr = sp.Spool(batch); spoolErr == nil {
			r.mu.Lock()
			// Record only appends: the first len(batch) entries are still
			// those spooled.
			r.batch = r.batch[len(batch):]
			r.queued = entryBytes(r.batch)
			r.stats.Spooled += int64(records(batch))
			r.stats.SpooledUnwritable += int64(records(batch))
			r.mu.Unlock()
			r.reportShed("failing spooled", fmt.Errorf("otelrecords: the store refused writes (%w); %d records were set aside in its spool, which the next process to open it writes (see Stats().Spooled)", cause, records(batch)))
			return
		}
	}
	if r.imported {
		// An Importer refuses new spans while the store fails, so what
		// waits here is bounded by what it took before it knew; and what it
		// took may have been acknowledged: it waits for the store.
		r.reportShed("failing kept", fmt.Errorf("otelrecords: the store refused writes (%w) and its spool too (%w): %d records wait in memory for it, and new spans are refused until it takes them", cause, spoolErr, records(batch)))
		return
	}
	r.mu.Lock()
	kept := make([]sessions.Entry, 0, len(r.batch))
	bytes, dropped := r.queued, 0
	for _, e := range r.batch {
		if bytes > SpillBytes/2 && !keys.IsSession(e.Key) {
			bytes -= len(e.Key) + len(e.Value)
			dropped++
			continue
		}
		kept = append(kept, e)
	}
	r.batch, r.queued = kept, bytes
	r.stats.Unwritable += int64(dropped)
	r.mu.Unlock()
	r.reportShed("failing dropped", fmt.Errorf("otelrecords: the store refused writes (%w) and its spool too (%w): dropped the %d oldest of the records waiting in memory, to keep them within %d MiB; later ones are dropped the same way, and counted in Stats().Unwritable, until a write succeeds",
		cause, spoolErr, dropped, SpillBytes>>20))
}

// reportShed reports err once per failing streak (a streak ends when a
// write succeeds): a disk that stays full for an hour is said once, and
// a disk that fills again later is said again.
func (r *Recorder) reportShed(class string, err error) {
	r.mu.Lock()
	seen := r.shedSaid[class]
	if r.shedSaid == nil {
		r.shedSaid = map[string]bool{}
	}
	r.shedSaid[class] = true
	streak := r.streak
	r.mu.Unlock()
	if !seen && r.report != nil {
		r.report(fmt.Sprintf("%s %d", class, streak), err)
	}
}

// wrote ends a failing streak: the next shed is reported again. r.mu is
// held.
func (r *Recorder) wrote() {
	if len(r.shedSaid) > 0 {
		clear(r.shedSaid)
		r.streak++
	}
}
