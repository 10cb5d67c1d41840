package main

import (
	"bufio"
	"cmp"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/sessions"
)

// defaultTop is how many of each session's slowest records summary shows.
const defaultTop = 3

func (a *app) summaryCommand() *cobra.Command {
	var (
		asJSON  bool
		top     int
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "summary",
		Short: "Summarise each session: when, what, how long, and what cost most",
		Long: `Summarise the sessions in the store, one row each, oldest first: its id,
start (UTC), label, process id and duration (from its first stamp, where its
clock starts, to the end of its last record); how many records of each kind
it left and their total wall time (kind=count/total); and its slowest
records (name=wall, slowest first).

With --json, one JSON object per session and line: id, started_unix_ms,
label, process, duration_ns, records (kind -> {count, wall_ns}) and slowest
([{kind, seq, offset_ns, name, wall_ns}]). Records whose session row is gone
(another process pruned it while it ran) are summarised under their
session's id, with an empty label and process 0.`,
		Example: `  records summary
  records summary --top 10 --session 1735787045006000000
  records summary --json | jq -r '"\(.label): \(.duration_ns / 1e9)s"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			if top < 0 {
				return usageError{errors.New("--top must not be negative")}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				sums, err := summarise(r, top, session.readOptions()...)
				if err != nil {
					return err
				}
				if session.set && len(sums) == 0 {
					return session.missing()
				}
				return printSummaries(cmd, sums, asJSON)
			})
		},
	}
	session.register(cmd, "summarise only the session with this `id`")
	cmd.Flags().IntVar(&top, "top", defaultTop, "show this many of each session's slowest records")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per session, one per line")
	return cmd
}

// summary is what summary says of one session.
type summary struct {
	sessions.Session
	end     time.Duration         // the end of its last record
	kinds   map[string]*kindTotal // by kind
	slowest []kindRecord          // slowest first; at most top
}

// kindTotal counts the records of one kind in a session.
type kindTotal struct {
	Count  int   `json:"count"`
	WallNs int64 `json:"wall_ns"`
}

// summarise reads every record once, kind by kind (the order does not
// matter to a sum), keeping per session only its totals and its top
// slowest records: memory follows the number of sessions, not of records.
func summarise(r *sessions.Records, top int, opts ...sessions.ReadOption) ([]*summary, error) {
	rows, err := sessionRows(r, opts...)
	if err != nil {
		return nil, err
	}
	kinds, err := r.Kinds()
	if err != nil {
		return nil, err
	}
	byID := map[sessions.SessionID]*summary{}
	get := func(id sessions.SessionID) *summary {
		s := byID[id]
		if s == nil {
			s = &summary{Session: orphanRow(id), kinds: map[string]*kindTotal{}}
			byID[id] = s
		}
		return s
	}
	for _, row := range rows {
		get(row.ID).Session = row
	}
	for _, kind := range kinds {
		for rec, err := range r.All(kind, opts...) {
			if err != nil {
				return nil, err
			}
			s := get(rec.Stamp.Session)
			s.end = sessionEnd(s.end, rec.Stamp, rec.Record.Wall)
			t := s.kinds[kind]
			if t == nil {
				t = &kindTotal{}
				s.kinds[kind] = t
			}
			t.Count++
			t.WallNs += int64(rec.Record.Wall)
			s.slowest = keepSlowest(s.slowest, kindRecord{Kind: kind, Stamped: rec}, top)
		}
	}
	return slices.SortedFunc(maps.Values(byID), func(a, b *summary) int { return cmp.Compare(a.ID, b.ID) }), nil
}

// keepSlowest adds kr to the slowest records, slowest first, if it is
// among the top; equal walls keep stamp order, so output is stable.
func keepSlowest(slowest []kindRecord, kr kindRecord, top int) []kindRecord {
	i, _ := slices.BinarySearchFunc(slowest, kr, bySlowest)
	if i >= top {
		return slowest
	}
	kr.Record.Attributes, kr.Record.Events = nil, nil // held for its name and wall only
	slowest = slices.Insert(slowest, i, kr)
	if len(slowest) > top {
		slowest = slowest[:top]
	}
	return slowest
}

// bySlowest orders records by wall time, longest first, then in stamp
// order.
func bySlowest(a, b kindRecord) int {
	if c := cmp.Compare(b.Record.Wall, a.Record.Wall); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Stamp.Seq, b.Stamp.Seq); c != 0 {
		return c
	}
	return cmp.Compare(a.Kind, b.Kind)
}

// summaryJSON is a session as `records summary --json` prints it.
type summaryJSON struct {
	ID            sessions.SessionID    `json:"id"`
	StartedUnixMs int64                 `json:"started_unix_ms"`
	Label         string                `json:"label"`
	Process       int                   `json:"process"`
	DurationNs    int64                 `json:"duration_ns"`
	Records       map[string]*kindTotal `json:"records"`
	Slowest       []slowJSON            `json:"slowest"`
}

// slowJSON is one of a session's slowest records.
type slowJSON struct {
	Kind     string `json:"kind"`
	Seq      uint64 `json:"seq"`
	OffsetNs int64  `json:"offset_ns"`
	Name     string `json:"name"`
	WallNs   int64  `json:"wall_ns"`
}

func printSummaries(cmd *cobra.Command, sums []*summary, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		for _, s := range sums {
			slow := make([]slowJSON, len(s.slowest))
			for i, kr := range s.slowest {
				slow[i] = slowJSON{kr.Kind, kr.Stamp.Seq, int64(kr.Stamp.Offset), kr.Record.Name, int64(kr.Record.Wall)}
			}
			if err := enc.Encode(summaryJSON{
				ID:            s.ID,
				StartedUnixMs: s.StartedUnixMs,
				Label:         s.Label,
				Process:       s.Process,
				DurationNs:    int64(s.end),
				Records:       s.kinds,
				Slowest:       slow,
			}); err != nil {
				return err
			}
		}
		return out.Flush()
	}

	t := newTable(out)
	if err := t.row("ID", "STARTED", "LABEL", "PID", "DURATION", "RECORDS", "SLOWEST"); err != nil {
		return err
	}
	for _, s := range sums {
		if err := t.row(
			s.ID.String(),
			formatTime(time.UnixMilli(s.StartedUnixMs)),
			orDash(s.Label),
			formatPID(s.Process),
			s.end.String(),
			orDash(formatTotals(s.kinds)),
			orDash(formatSlowest(s.slowest)),
		); err != nil {
			return err
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return out.Flush()
}

// formatPID formats a process id, or "-" for a session known only by the
// records it left.
func formatPID(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// formatTotals formats each kind's count and total wall as
// "kind=count/total", in kind order.
func formatTotals(kinds map[string]*kindTotal) string {
	var b strings.Builder
	for i, kind := range slices.Sorted(maps.Keys(kinds)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		t := kinds[kind]
		b.WriteString(formatString(kind))
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(t.Count))
		b.WriteByte('/')
		b.WriteString(time.Duration(t.WallNs).String())
	}
	return b.String()
}

// formatSlowest formats records as "name=wall", slowest first.
func formatSlowest(slowest []kindRecord) string {
	var b strings.Builder
	for i, kr := range slowest {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(formatString(kr.Record.Name))
		b.WriteByte('=')
		b.WriteString(kr.Record.Wall.String())
	}
	return b.String()
}
