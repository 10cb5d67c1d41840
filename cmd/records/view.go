package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
)

// This file holds what the commands that look at sessions share: the
// --session flag, the session rows, and the session a one-session command
// (report) shows.

// sessionFlag is a --session flag: one session's id, or every session when
// it is not given.
type sessionFlag struct {
	id  uint64
	set bool
}

func (f *sessionFlag) register(cmd *cobra.Command, usage string) {
	cmd.Flags().Var(f, "session", usage)
}

// parse notes whether the flag was given; call it from RunE.
func (f *sessionFlag) parse(cmd *cobra.Command) { f.set = cmd.Flags().Changed("session") }

// Set takes the flag's value: a session id, as records sessions prints it.
func (f *sessionFlag) Set(s string) error {
	id, err := parseSessionID(s)
	if err != nil {
		return err
	}
	f.id, f.set = uint64(id), true
	return nil
}

// parseSessionID reads a session id as the commands print it: in decimal,
// in a table or as a JSON string ("1735787045006000000", quotes and all,
// as jq prints it without -r).
func parseSessionID(s string) (sessions.SessionID, error) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("not a session id (a decimal number, as records sessions prints it)")
	}
	return sessions.SessionID(id), nil
}

func (f *sessionFlag) String() string {
	if !f.set {
		return ""
	}
	return strconv.FormatUint(f.id, 10)
}

// Type names the flag's value in the help.
func (f *sessionFlag) Type() string { return "id" }

// needKind returns an error naming the kinds the store has when it has no
// record of kind: a typed read of a kind that is not there would print
// nothing, and leave the user to guess whether the kind was misspelt. A
// kind whose records the sessions all let go, and tallied (a server kept
// by trace, whose lookups all hit), is said to be so.
func needKind(r *sessions.Records, kind string) error { return checkKind(r, kind, false) }

// needKindOrTallied is needKind for a view that counts what kept sessions
// let go too (why): a kind only tallied is there.
func needKindOrTallied(r *sessions.Records, kind string) error { return checkKind(r, kind, true) }

func checkKind(r *sessions.Records, kind string, tallies bool) error {
	kinds, err := r.Kinds()
	if err != nil {
		return err
	}
	if slices.Contains(kinds, kind) {
		return nil
	}
	sum, err := tallied.Read(r, nil, nil, false)
	if err != nil {
		return err
	}
	var let []string // the kinds only tallied
	for _, e := range sum.Kinds() {
		switch {
		case e.Kind == kind && tallies:
			return nil
		case e.Kind == kind:
			return fmt.Errorf("the store keeps no record of kind %s: its sessions let them go, and counted them in their tallies (records cost and records why count them)", render.String(kind))
		case e.Kind != "" && !slices.Contains(kinds, e.Kind): // "": the rest of kinds past a tally's bound
			let = append(let, render.String(e.Kind))
		}
	}
	var also string
	if len(let) > 0 {
		also = " (and let go, tallied: " + strings.Join(let, ", ") + ")"
	}
	if len(kinds) == 0 {
		return fmt.Errorf("the store has no records of kind %s: it has no records at all%s", render.String(kind), also)
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = render.String(k)
	}
	return fmt.Errorf("the store has no records of kind %s; its kinds are: %s%s", render.String(kind), strings.Join(names, ", "), also)
}

// readOptions returns the read options that narrow a read to the session.
func (f *sessionFlag) readOptions() []sessions.ReadOption {
	if !f.set {
		return nil
	}
	return []sessions.ReadOption{sessions.InSession(sessions.SessionID(f.id))}
}

// missing is the error for a --session that names no session of the
// store.
func (f *sessionFlag) missing() error {
	return fmt.Errorf("the store has no session %d (records sessions lists them)", f.id)
}

// need returns missing's error when the flag names a session the store
// holds neither a row nor a record of, and nil otherwise: a command that
// lists records (dump, show) would print none, as it does for a session
// that holds none of the kind asked, and leave a mistyped id unsaid.
func (f *sessionFlag) need(r *sessions.Records) error {
	if !f.set {
		return nil
	}
	_, err := pickSession(r, *f)
	return err
}

// sessionRows reads the session rows the options select, oldest first.
func sessionRows(r *sessions.Records, opts ...sessions.ReadOption) ([]sessions.Session, error) {
	var rows []sessions.Session
	for s, err := range r.Sessions(opts...) {
		if err != nil {
			return nil, err
		}
		rows = append(rows, s)
	}
	return rows, nil
}

// withOrphans returns rows plus a bare row for every id in ids that has
// none, sorted by id: records may outlive their session's row (a process
// whose session another process pruned while it ran keeps writing under
// it), and a reader shows them rather than hide them.
func withOrphans(rows []sessions.Session, ids []sessions.SessionID) []sessions.Session {
	have := make(map[sessions.SessionID]bool, len(rows))
	for _, s := range rows {
		have[s.ID] = true
	}
	for _, id := range ids {
		if !have[id] {
			have[id] = true
			rows = append(rows, explain.OrphanRow(id))
		}
	}
	slices.SortFunc(rows, func(a, b sessions.Session) int { return cmp.Compare(a.ID, b.ID) })
	return rows
}

// pickSession returns the session a one-session command (report) shows:
// the one --session names, else the newest. A session with records but no
// row (see withOrphans) can be named too.
func pickSession(r *sessions.Records, f sessionFlag) (sessions.Session, error) {
	if f.set {
		id := sessions.SessionID(f.id)
		s, ok, err := r.Session(id)
		if err != nil || ok {
			return s, err
		}
		kinds, err := r.Kinds()
		if err != nil {
			return s, err
		}
		for _, kind := range kinds {
			for _, err := range r.All(kind, sessions.InSession(id)) {
				if err != nil {
					return s, err
				}
				return explain.OrphanRow(id), nil
			}
		}
		return s, f.missing()
	}
	rows, err := sessionRows(r)
	if err != nil {
		return sessions.Session{}, err
	}
	if len(rows) == 0 {
		return sessions.Session{}, errors.New("the store has no sessions")
	}
	return rows[len(rows)-1], nil
}
