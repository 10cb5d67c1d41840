package main

import (
	"bufio"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

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

// sessionJSON is a session as `records sessions --json` prints it; its
// fields are part of the documented output (docs/FORMAT.md).
type sessionJSON struct {
	ID                 sessions.SessionID `json:"id,string"`
	StartedUnixMs      int64              `json:"started_unix_ms"`
	Label              string             `json:"label"`
	Process            int                `json:"process"`
	OS                 string             `json:"os"`
	Arch               string             `json:"arch"`
	ServiceVersion     string             `json:"service_version"`
	OtelrecordsVersion string             `json:"otelrecords_version"`
	Resource           sessions.Attrs     `json:"resource"`
	Records            map[string]int     `json:"records"`
}

// serviceVersion returns the version of the service a session ran: its
// Resource's service.version, "" when it has none. For a sender's session
// (through a Collector, or pulled) it is the sender's; the row's Version
// is the otelrecords that wrote the session, which there is the
// Collector's.
func serviceVersion(s sessions.Session) string {
	if v, ok := s.Resource.Get("service.version"); ok {
		return v.String()
	}
	return ""
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
		enc := jsonLines(out)
		for _, s := range rows {
			if err := enc.Encode(toSessionJSON(s, counts[s.ID])); err != nil {
				return err
			}
		}
		return out.Flush()
	}

	t := newTable(out)
	if err := t.row("ID", "STARTED", "LABEL", "PID", "OS", "ARCH", "VERSION", "RECORDS"); err != nil {
		return err
	}
	for _, s := range rows {
		if err := t.row(
			s.ID.String(),
			formatTime(time.UnixMilli(s.StartedUnixMs)),
			orDash(s.Label),
			strconv.Itoa(s.Process),
			orDash(s.OS),
			orDash(s.Arch),
			orDash(serviceVersion(s)),
			orDash(formatCounts(counts[s.ID])),
		); err != nil {
			return err
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return out.Flush()
}

// formatCounts formats counts per kind as "kind=n" pairs in kind order.
func formatCounts(c map[string]int) string {
	var b strings.Builder
	for i, kind := range slices.Sorted(maps.Keys(c)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kind)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(c[kind]))
	}
	return b.String()
}

// toSessionJSON is a session row as `sessions --json` (and `prune --json`)
// print it, with its record counts per kind; never a null object.
func toSessionJSON(s sessions.Session, counts map[string]int) sessionJSON {
	if counts == nil {
		counts = map[string]int{}
	}
	return sessionJSON{
		ID:                 s.ID,
		StartedUnixMs:      s.StartedUnixMs,
		Label:              s.Label,
		Process:            s.Process,
		OS:                 s.OS,
		Arch:               s.Arch,
		ServiceVersion:     serviceVersion(s),
		OtelrecordsVersion: s.Version,
		Resource:           s.Resource,
		Records:            counts,
	}
}
