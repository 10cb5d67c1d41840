package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// resetStore deletes the example's own sessions from the store in dir (the
// sessions whose Resource says service.name=serviceName), with their
// records, and the example's cache. Every other session stays: the store
// may be the user's default one, holding what their own programs recorded.
// A store that does not exist is not created.
func resetStore(out io.Writer, dir, cache string) error {
	removed, left := 0, 0
	if _, err := os.Stat(dir); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := badgerstore.OpenWait(ctx, dir, func(error) {
			fmt.Fprintf(out, "waiting for another process to let %s go\n", dir)
		})
		if err != nil {
			return err
		}
		removed, left, err = deleteSessions(sessions.NewRecords(st), st, func(s sessions.Session) bool {
			v, ok := s.Resource.Get("service.name")
			return ok && v.AsString() == serviceName
		})
		if err = errors.Join(err, st.Close()); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "removed %s of this example from %s (%s left as they were), and %s\n",
		plural(removed, "session"), dir, plural(left, "other session"), cache)
	return os.RemoveAll(cache)
}

// deleteSessions deletes the sessions that mine says are the example's,
// with their records, and returns how many it deleted and how many other
// sessions it left. A session's records of one kind are one range of keys
// (docs/FORMAT.md §2), so each deletion touches only what it deletes.
func deleteSessions(r *sessions.Records, st sessions.Store, mine func(sessions.Session) bool) (removed, left int, err error) {
	var ids []uint64
	for s, err := range r.Sessions() {
		if err != nil {
			return 0, 0, err
		}
		if mine(s) {
			ids = append(ids, uint64(s.ID))
		} else {
			left++
		}
	}
	kinds, err := r.Kinds()
	if err != nil {
		return 0, 0, err
	}
	for _, id := range ids {
		// Records first, the row last: a reset cut short leaves the row,
		// and the next one finds the session again.
		for _, kind := range kinds {
			ns := keys.Namespace(kind)
			if _, err := st.DeleteRange(keys.SessionBound(ns, id), keys.SessionBound(ns, id+1), nil); err != nil {
				return removed, left, err
			}
		}
		row := keys.Session(id)
		if _, err := st.DeleteRange(row, append(row, 0), nil); err != nil {
			return removed, left, err
		}
		removed++
	}
	return removed, left, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
