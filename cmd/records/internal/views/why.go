package views

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// sessionTally is what one session tallied of a key: its records let go.
type sessionTally struct {
	session sessions.SessionID
	entry   tallies.Entry
}

// Why prints why each record of kind whose attribute key is value was
// done, as records why does, text or JSON Lines, and after each session's
// records how often the session hit the key without keeping a record of
// it (its tally). It returns an error when neither a record nor a tally
// has the key.
func Why(w io.Writer, r *sessions.Records, kind, key, value string, asJSON bool) error {
	sum, err := tallied.Read(r, nil, []string{kind}, true)
	if err != nil {
		return err
	}
	var pending []sessionTally // in session order, as Records.Sessions
	for s, err := range r.Sessions() {
		if err != nil {
			return err
		}
		t, _ := sum.Session(s.ID)
		for _, e := range t.Entries {
			if v, ok := e.Key.Get(key); ok && e.Kind == kind && (v.Equal(sessions.StringValue(value)) || v.String() == value) {
				pending = append(pending, sessionTally{s.ID, e})
			}
		}
	}
	out := bufio.NewWriter(w)
	enc := api.NewEncoder(out)
	t := render.NewTable(out)
	n := 0
	header := func() error {
		if n++; n == 1 && !asJSON {
			return t.Row("SESSION", "SEQ", "WALL", "WHY")
		}
		return nil
	}
	// printTallies prints the tallies of the sessions before id.
	printTallies := func(before sessions.SessionID, all bool) error {
		for len(pending) > 0 && (all || pending[0].session < before) {
			p := pending[0]
			pending = pending[1:]
			if err := header(); err != nil {
				return err
			}
			if asJSON {
				err = enc.Encode(api.NewWhyTally(p.session, p.entry))
			} else {
				err = t.Row(p.session.String(), "-", render.Duration(p.entry.Wall), render.TallyEntry(p.entry))
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	for reason, err := range explain.Why(r, kind, key, sessions.StringValue(value)) {
		if err == nil {
			err = printTallies(reason.Stamp.Session, false)
		}
		if err != nil {
			t.Flush()
			out.Flush() // show what was read before the error
			return err
		}
		if err := header(); err != nil {
			return err
		}
		if asJSON {
			if err := enc.Encode(api.NewWhy(reason)); err != nil {
				return err
			}
			continue
		}
		if err := t.Row(reason.Stamp.Session.String(), strconv.FormatUint(reason.Stamp.Seq, 10),
			render.Duration(reason.Record.Wall), render.Why(reason, key, value)); err != nil {
			return err
		}
		if n%render.FlushEvery == 0 {
			if err := t.Flush(); err != nil {
				return err
			}
		}
	}
	if err := printTallies(0, true); err != nil {
		return err
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if !asJSON && n > 0 {
		if !tallies.IsKey(key) && sum.Tallied() {
			fmt.Fprintf(out, "%s is not an attribute tallies keep (key and *.key): hits of it let go are not told apart here (records cost counts them by key).\n", render.String(key))
		} else if note := TallyNote(sum); note != "" && sum.Tallied() {
			// Only where some sessions keep a tally: a store written
			// before tallies lists its records as it always did.
			fmt.Fprintln(out, note)
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no record of kind %s has %s=%s, and no tally of one", render.String(kind), render.String(key), render.String(value))
	}
	return nil
}
