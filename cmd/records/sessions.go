package main

import (
	"bufio"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) sessionsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions in the store, oldest first",
		Long: `List the sessions in the store, oldest first: each one's id, start (UTC),
label, process id, operating system, architecture, version (the service's:
its Resource's service.version, "-" when it has none; through a Collector,
the sender's), and how many records of each kind it left.

With --json, one JSON object per session and line: id (a string: session
ids are beyond what a JavaScript number, or jq 1.6, holds exactly),
started_unix_ms, label, process, os, arch, service_version (the Resource's
service.version, "" when none), otelrecords_version (the otelrecords
version that wrote the session: the program's own, or the Collector's for
a sender's session), resource and records (kind → count).

Only sessions that changed something are in a store: a run that found
everything cached left nothing.`,
		Example: `  records sessions
  records sessions --dir ./build/records
  records sessions --json | jq -r 'select(.records.autotune > 0) | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.read(cmd, func(r *sessions.Records) error {
				return listSessions(cmd, r, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per session, one per line")
	return cmd
}

func listSessions(cmd *cobra.Command, r *sessions.Records, asJSON bool) error {
	var rows []sessions.Session
	for s, err := range r.Sessions() {
		if err != nil {
			return err
		}
		rows = append(rows, s)
	}
	counts, err := r.Counts()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := api.NewEncoder(out)
		for _, s := range rows {
			if err := enc.Encode(api.NewSession(s, counts[s.ID])); err != nil {
				return err
			}
		}
	} else if err := render.Sessions(out, rows, counts); err != nil {
		return err
	}
	return out.Flush()
}
