package views

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"strconv"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// WhyLine is one line of why's history of a key: a record and why it was
// done, or, when Tallied, what a session let go of the key and its tally
// counted (every one a hit).
type WhyLine struct {
	// Reason is the record and why it was done; zero when Tallied.
	Reason explain.Reason
	// Tallied says the line is a session's tally entry of the key.
	Tallied bool
	// Session and Entry are the tally's session and entry, when Tallied.
	Session sessions.SessionID
	Entry   tallies.Entry
}

// WhyLines returns the lines of why's history of the key: each record of
// kind whose attribute key is value, oldest first (explain.Why), and after
// each session's records that session's tally entries of the key. It
// returns the tallies read too, for what a view says of them.
func WhyLines(r *sessions.Records, kind, key, value string) (iter.Seq2[WhyLine, error], *tallied.Sum, error) {
	sum, err := tallied.Read(r, nil, []string{kind}, true)
	if err != nil {
		return nil, nil, err
	}
	var pending []WhyLine // in session order, as Records.Sessions
	for s, err := range r.Sessions() {
		if err != nil {
			return nil, nil, err
		}
		t, _ := sum.Session(s.ID)
		for _, e := range t.Entries {
			if v, ok := e.Key.Get(key); ok && e.Kind == kind && (v.Equal(sessions.StringValue(value)) || v.String() == value) {
				pending = append(pending, WhyLine{Tallied: true, Session: s.ID, Entry: e})
			}
		}
	}
	return func(yield func(WhyLine, error) bool) {
		// flush yields the tallies of the sessions before id (all of
		// them, with all).
		flush := func(before sessions.SessionID, all bool) bool {
			for len(pending) > 0 && (all || pending[0].Session < before) {
				p := pending[0]
				pending = pending[1:]
				if !yield(p, nil) {
					return false
				}
			}
			return true
		}
		for reason, err := range explain.Why(r, kind, key, sessions.StringValue(value)) {
			if err != nil {
				yield(WhyLine{}, err)
				return
			}
			if !flush(reason.Stamp.Session, false) || !yield(WhyLine{Reason: reason}, nil) {
				return
			}
		}
		flush(0, true)
	}, sum, nil
}

// Why prints why each record of kind whose attribute key is value was
// done, as records why does, text or JSON Lines, and after each session's
// records how often the session hit the key without keeping a record of
// it (its tally). It returns an error when neither a record nor a tally
// has the key.
func Why(w io.Writer, r *sessions.Records, kind, key, value string, asJSON bool) error {
	lines, sum, err := WhyLines(r, kind, key, value)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(w)
	enc := api.NewEncoder(out)
	t := render.NewTable(out)
	n := 0
	for l, err := range lines {
		if err != nil {
			t.Flush()
			out.Flush() // show what was read before the error
			return err
		}
		if n++; n == 1 && !asJSON {
			if err := t.Row("SESSION", "SEQ", "WALL", "WHY"); err != nil {
				return err
			}
		}
		switch {
		case asJSON && l.Tallied:
			err = enc.Encode(api.NewWhyTally(l.Session, l.Entry))
		case asJSON:
			err = enc.Encode(api.NewWhy(l.Reason))
		case l.Tallied:
			err = t.Row(l.Session.String(), "-", render.Duration(l.Entry.Wall), render.TallyEntry(l.Entry))
		default:
			reason := l.Reason
			err = t.Row(reason.Stamp.Session.String(), strconv.FormatUint(reason.Stamp.Seq, 10),
				render.Duration(reason.Record.Wall), render.Why(reason, key, value))
		}
		if err != nil {
			return err
		}
		if n%render.FlushEvery == 0 {
			if err := t.Flush(); err != nil {
				return err
			}
		}
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
	if n == 0 && !tallies.IsKey(key) && sum.Tallied() {
		// "and no tally of one" would say the records let go had none:
		// a tally does not keep the attribute, so cannot tell.
		return fmt.Errorf("no record of kind %s has %s=%s; of the records let go, tallies keep only key and *.key attributes, so cannot tell", render.String(kind), render.String(key), render.String(value))
	}
	if n == 0 {
		return fmt.Errorf("no record of kind %s has %s=%s, and no tally of one", render.String(kind), render.String(key), render.String(value))
	}
	return nil
}
