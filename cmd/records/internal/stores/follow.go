package stores

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// Following a store.
const (
	// FollowOpenWait bounds how long one Read waits for a writer to let
	// the store go. A writer yields at once when asked (see
	// internal/write/sharedstore); one that does not is left alone until
	// the next read, rather than waited for.
	FollowOpenWait = 2 * time.Second
	// followIdle is how long a session that writes nothing stays followed
	// once a newer one has started.
	followIdle = time.Minute
)

// A Follower follows a store that programs write, for records watch: the
// session in progress when it starts (the newest) and every session that
// appears after it, whenever it started, each record of them once. Each
// Read opens the store read-only, asking a writer that holds it to let go,
// reads what is new and lets go at once.
type Follower struct {
	kinds []string // nil: every kind
	// known holds every session seen in the store, followed or not: the
	// sessions there at the first read that watch does not follow, and
	// the followed ones, so a session is followed from its first record
	// only when it appears after the first read, whatever its id.
	known map[sessions.SessionID]bool
	seen  map[sessions.SessionID]*followed
	// pruned is told of a followed session whose row went, and how many
	// of its records watch had read (printed, or there when it started).
	pruned func(id sessions.SessionID, printed int)
}

// NewFollower returns a follower of the records of kinds (every kind when
// nil). pruned is told of a followed session whose row went (a prune),
// and how many of its records were read.
func NewFollower(kinds []string, pruned func(id sessions.SessionID, read int)) *Follower {
	return &Follower{kinds: kinds, seen: map[sessions.SessionID]*followed{}, known: map[sessions.SessionID]bool{}, pruned: pruned}
}

// followed is a session watch follows: the seqs it printed (or found
// when it started), when it last wrote something, and whether its row
// was there at the last read.
type followed struct {
	seqs   map[uint64]bool
	active time.Time
	hadRow bool
}

// Read opens the store read-only, emits the records of the followed
// sessions not emitted before, in stamp order, and closes the store. The
// first read emits nothing: it notes what is there.
func (w *Follower) Read(ctx context.Context, dir string, first bool, emit func(sessions.KindRecord) error) error {
	octx, cancel := context.WithTimeout(ctx, FollowOpenWait)
	defer cancel()
	st, err := badgerstore.OpenWait(octx, dir, nil, badgerstore.WithReadOnly())
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, badgerstore.ErrLocked):
		return err // no store yet, or busy: the caller tries again
	case err != nil && first:
		return err
	case err != nil:
		return nil // try again at the next tick
	}
	defer st.Close() // a read-only store has nothing to lose on close
	r := sessions.NewRecords(st)
	var rows []sessions.Session
	for s, err := range r.Sessions() {
		if err != nil {
			return err
		}
		rows = append(rows, s)
	}
	now := time.Now()
	hasRow := make(map[sessions.SessionID]bool, len(rows))
	for i, s := range rows {
		hasRow[s.ID] = true
		switch {
		case w.known[s.ID]:
		case first && i < len(rows)-1:
			w.known[s.ID] = true // there before watch: not followed
		default:
			// The newest at the first read, or any session that appeared
			// since.
			w.known[s.ID] = true
			w.seen[s.ID] = &followed{seqs: map[uint64]bool{}, active: now}
		}
	}
	if len(w.seen) == 0 {
		return nil
	}
	kinds := w.kinds
	if kinds == nil {
		if kinds, err = r.Kinds(); err != nil {
			return err
		}
	}
	ids := slices.Sorted(maps.Keys(w.seen))
	for _, id := range ids {
		f := w.seen[id]
		for kr, err := range r.InStampOrder(kinds, sessions.InSession(id)) {
			if err != nil {
				return err
			}
			if f.seqs[kr.Stamp.Seq] {
				continue
			}
			f.seqs[kr.Stamp.Seq] = true
			f.active = now
			if !first {
				if err := emit(kr); err != nil {
					return err
				}
			}
		}
		if f.hadRow && !hasRow[id] {
			w.pruned(id, len(f.seqs))
		}
		f.hadRow = hasRow[id]
	}
	// Stop following sessions other than the newest that have gone quiet
	// (or were pruned, and nothing has written under them since).
	newest := ids[len(ids)-1]
	for _, id := range ids {
		if id != newest && now.Sub(w.seen[id].active) > followIdle {
			delete(w.seen, id)
		}
	}
	return nil
}
