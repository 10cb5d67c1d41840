package explain

import (
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// A Visitor is what Walk calls for each session: Begin with its row,
// Record with each of its records in stamp order, then End. A nil func
// is not called.
type Visitor struct {
	Begin  func(sessions.Session) error
	Record func(sessions.KindRecord) error
	End    func(sessions.Session) error
}

// Walk reads the store session by session, oldest first, each session's
// records in stamp order across every kind, and calls v: a view of every
// session (a summary, a timeline, a trace file) reads the store once, and
// holds what it keeps of one session at a time. The options narrow the
// read as they narrow Records.Sessions and Records.InStampOrder (to one
// session, say).
//
// Every session row the options select is visited, those without records
// too. Records whose session has no row (a process whose session another
// process pruned while it ran keeps writing under it) are visited under
// the bare row OrphanRow gives, where their id puts them: a reader shows
// them rather than hide them. Walk holds no record. An error from v or
// from the store ends the walk with that error.
func Walk(r *sessions.Records, v Visitor, opts ...sessions.ReadOption) error {
	var rows []sessions.Session
	for s, err := range r.Sessions(opts...) {
		if err != nil {
			return err
		}
		rows = append(rows, s)
	}
	kinds, err := r.Kinds()
	if err != nil {
		return err
	}
	begin := func(s sessions.Session) error {
		if v.Begin == nil {
			return nil
		}
		return v.Begin(s)
	}
	end := func(s sessions.Session) error {
		if v.End == nil {
			return nil
		}
		return v.End(s)
	}
	var (
		cur  sessions.Session
		open bool
	)
	// emptyUntil visits the rows before the session id, which have no
	// records; every row left, when last.
	emptyUntil := func(id sessions.SessionID, last bool) error {
		for len(rows) > 0 && (last || rows[0].ID < id) {
			if err := begin(rows[0]); err != nil {
				return err
			}
			if err := end(rows[0]); err != nil {
				return err
			}
			rows = rows[1:]
		}
		return nil
	}
	for kr, err := range r.InStampOrder(kinds, opts...) {
		if err != nil {
			return err
		}
		if id := kr.Stamp.Session; !open || id != cur.ID {
			if open {
				if err := end(cur); err != nil {
					return err
				}
			}
			if err := emptyUntil(id, false); err != nil {
				return err
			}
			cur, open = OrphanRow(id), true
			if len(rows) > 0 && rows[0].ID == id {
				cur, rows = rows[0], rows[1:]
			}
			if err := begin(cur); err != nil {
				return err
			}
		}
		if v.Record != nil {
			if err := v.Record(kr); err != nil {
				return err
			}
		}
	}
	if open {
		if err := end(cur); err != nil {
			return err
		}
	}
	return emptyUntil(0, true)
}

// OrphanRow is what is known of a session from its id alone: its id, and
// its start, which the id is (docs/FORMAT.md §4.1). Walk visits records
// whose session row is gone under it.
func OrphanRow(id sessions.SessionID) sessions.Session {
	return sessions.Session{ID: id, StartedUnixMs: time.Unix(0, int64(id)).UnixMilli()}
}
