// Package views prints the answers of records' commands that count work
// (cost, diff, why), as text or as JSON Lines: what explain answers, with
// what the sessions' tallies (explain/tallied) add to it.
package views

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// Rework adds up every session of the store, one tree at a time, with the
// tally of each (explain.Rework.Tally); the returned sum says how many
// sessions have none. It stops between sessions once ctx is done.
func Rework(ctx context.Context, r *sessions.Records) (*explain.Rework, *tallied.Sum, error) {
	var w explain.Rework
	sum := tallied.New(nil)
	err := explain.Walk(r, explain.Visitor{
		Begin: func(s sessions.Session) error {
			w.Begin(s)
			t, ok, err := tallies.Read(r, s.ID)
			if ok {
				w.Tally(t)
			}
			sum.Add(t, ok)
			return cmp.Or(err, ctx.Err())
		},
		Record: w.Add,
	})
	return &w, sum, err
}

// Cost prints what records cost prints: its tables, at most top rows each
// (0 for all), as text or as JSON Lines.
func Cost(w io.Writer, rw *explain.Rework, sum *tallied.Sum, top int, asJSON bool) error {
	children, redone := rw.Children(), rw.Redone()
	// Marks are phases a program names: every run has them again.
	redone = slices.DeleteFunc(redone, func(k explain.KeyWork) bool { return k.Kind == sessions.MarksKind })
	leftChildren, leftRedone := 0, 0
	if top > 0 {
		leftChildren, leftRedone = max(len(children)-top, 0), max(len(redone)-top, 0)
		children, redone = children[:min(top, len(children))], redone[:min(top, len(redone))]
	}
	out := bufio.NewWriter(w)
	if !asJSON {
		if err := render.Cost(out, children, redone, leftChildren, leftRedone); err != nil {
			return err
		}
		if slices.ContainsFunc(redone, func(k explain.KeyWork) bool { return k.Tallied > 0 }) {
			fmt.Fprintln(out, "tallied: hits no record was kept of, let go and counted by their session's tally.")
		}
		if note := TallyNote(sum); note != "" {
			fmt.Fprintln(out, note)
		}
		return out.Flush()
	}
	enc := api.NewEncoder(out)
	for _, c := range children {
		if err := enc.Encode(api.NewChildCost(c)); err != nil {
			return err
		}
	}
	for _, k := range redone {
		if err := enc.Encode(api.NewRedone(k)); err != nil {
			return err
		}
	}
	if err := enc.Encode(api.NewTallies(sum)); err != nil {
		return err
	}
	return out.Flush()
}

// TallyNote says what the counts of the sessions sum read are of: "" when
// every session has a tally (or none was read), else that the counts of
// those without one are of kept records only.
func TallyNote(sum *tallied.Sum) string {
	var note string
	switch {
	case sum == nil || sum.Untallied == 0:
	case sum.Untallied == sum.Sessions:
		note = "No session here keeps a tally of what it let go (written before tallies): hits are of kept records only."
	default:
		note = fmt.Sprintf("%d of %s keep no tally of what they let go (written before tallies): their hits are of kept records only.",
			sum.Untallied, render.Plural(sum.Sessions, "session"))
	}
	if sum != nil && sum.Over > 0 {
		if note != "" {
			note += "\n"
		}
		note += fmt.Sprintf("%s past a tally's bound are counted under their kind alone, with no name.", render.Plural(int(sum.Over), "key"))
	}
	return note
}
