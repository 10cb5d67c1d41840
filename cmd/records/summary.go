package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/explain"
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
clock starts, to the end of its last record); for each kind, how many
records it left and how long at least one of them was open, with that
time's share of the session (kind=count/time(share)); and its slowest
records (name=wall, slowest first).

Time is counted once: a record inside another of its kind, or running
beside one, adds only the time the other did not cover, so no kind claims
more than the session lasted, however its records nest or run at once.

Below the table, each session's critical path: the chain of records that
bounded its duration (from the record that ended last back to the start,
each the one the next waited on), nested as the records nest, with the
time each alone held the session up. It follows parents and children, and
siblings one after the other, within one request (the roots of one trace):
of a server's session, whose requests ran side by side, it is the longest
request's, never a chain of unrelated requests. The text shows the 20
records that held it up most; JSON lists the whole path.

With --json, one JSON object per session and line: id, started_unix_ms,
label, process, duration_ns, records (kind -> {count, wall_ns}, the time
counted once), slowest ([{kind, seq, offset_ns, name, wall_ns}]) and
critical_path ({root_seq, seqs}: the root it starts from, null for a
session with no records, and the seqs of the records on it in pre-order,
a record before the records on the path inside it). Records whose session row is
gone (another process pruned it while it ran) are summarised under their
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
	sum   explain.Summary
	path  []explain.Step // its critical path, in pre-order
	nodes map[uint64]pathNode
	// requests is how many requests (explain's Requests) the session
	// holds: the path is the longest one's.
	requests int
	slowest  []kindRecord // slowest first; at most top
}

// pathNode is what summary shows of a record on the critical path.
type pathNode struct {
	kind, name   string
	offset, wall time.Duration
	depth        int
}

// summarise reads the sessions in stamp order, one at a time, and keeps
// of each its summary, critical path and top slowest records: memory
// follows the records of the largest session (a few words each, for its
// tree), not the store.
func summarise(r *sessions.Records, top int, opts ...sessions.ReadOption) ([]*summary, error) {
	var (
		sums []*summary
		cur  *summary
		b    explain.TreeBuilder
	)
	err := explain.Walk(r, explain.Visitor{
		Begin: func(s sessions.Session) error {
			cur = &summary{Session: s}
			return nil
		},
		Record: func(kr kindRecord) error {
			if err := b.Add(kr); err != nil { // a tree holds a few words a record
				return err
			}
			if i, _ := slices.BinarySearchFunc(cur.slowest, kr, bySlowest); i < top {
				kr.Record = compactRecord(kr.Record) // a copy of its own, without the attributes
				cur.slowest = keepSlowest(cur.slowest, kr, top)
			}
			return nil
		},
		End: func(sessions.Session) error {
			t := b.Tree()
			cur.sum = t.Summary()
			cur.path = t.CriticalPath()
			cur.requests = t.Requests()
			shown := shownSteps(cur.path)
			cur.nodes = make(map[uint64]pathNode, len(shown))
			for _, st := range shown {
				n := t.BySeq(st.Seq)
				name, err := nodeName(r, t, n)
				if err != nil {
					return err
				}
				cur.nodes[st.Seq] = pathNode{t.Kind(n), name, n.Offset, n.Wall, int(n.Depth)}
			}
			sums = append(sums, cur)
			return nil
		},
	}, opts...)
	return sums, err
}

// keepSlowest adds kr to the slowest records, slowest first, if it is
// among the top; equal walls keep stamp order, so output is stable.
func keepSlowest(slowest []kindRecord, kr kindRecord, top int) []kindRecord {
	i, _ := slices.BinarySearchFunc(slowest, kr, bySlowest)
	if i >= top {
		return slowest
	}
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
	ID            sessions.SessionID   `json:"id,string"`
	StartedUnixMs int64                `json:"started_unix_ms"`
	Label         string               `json:"label"`
	Process       int                  `json:"process"`
	DurationNs    int64                `json:"duration_ns"`
	Records       map[string]kindTotal `json:"records"`
	Slowest       []slowJSON           `json:"slowest"`
	CriticalPath  pathJSON             `json:"critical_path"`
}

// pathJSON is a session's critical path as `records summary --json`
// prints it: the root it starts from (null for a session with no
// records), and the seqs on it in pre-order.
type pathJSON struct {
	RootSeq *uint64  `json:"root_seq"`
	Seqs    []uint64 `json:"seqs"`
}

// kindTotal is one kind's share of a session: how many records, and how
// long at least one of them was open (time counted once).
type kindTotal struct {
	Count  int   `json:"count"`
	WallNs int64 `json:"wall_ns"`
}

// slowJSON is one of a session's slowest records.
type slowJSON struct {
	Kind     string `json:"kind"`
	Seq      uint64 `json:"seq"`
	OffsetNs int64  `json:"offset_ns"`
	Name     string `json:"name"`
	WallNs   int64  `json:"wall_ns"`
}

// summaryPathMax is how many records of a session's critical path the
// text shows at most: those that bounded it most, in path order. JSON
// lists them all.
const summaryPathMax = 20

func printSummaries(cmd *cobra.Command, sums []*summary, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		for _, s := range sums {
			slow := make([]slowJSON, len(s.slowest))
			for i, kr := range s.slowest {
				slow[i] = slowJSON{kr.Kind, kr.Stamp.Seq, int64(kr.Stamp.Offset), kr.Record.Name, int64(kr.Record.Wall)}
			}
			kinds := make(map[string]kindTotal, len(s.sum.Kinds))
			for _, k := range s.sum.Kinds {
				kinds[k.Kind] = kindTotal{k.Records, int64(k.Wall)}
			}
			path := pathJSON{Seqs: make([]uint64, len(s.path))}
			for i, st := range s.path {
				path.Seqs[i] = st.Seq
			}
			if len(s.path) > 0 {
				path.RootSeq = &path.Seqs[0] // pre-order: the root comes first
			}
			if err := enc.Encode(summaryJSON{
				ID:            s.ID,
				StartedUnixMs: s.StartedUnixMs,
				Label:         s.Label,
				Process:       s.Process,
				DurationNs:    int64(s.sum.End),
				Records:       kinds,
				Slowest:       slow,
				CriticalPath:  path,
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
			formatDuration(s.sum.End),
			orDash(formatTotals(s.sum)),
			orDash(formatSlowest(s.slowest)),
		); err != nil {
			return err
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, s := range sums {
		if err := printPath(out, s); err != nil {
			return err
		}
	}
	return out.Flush()
}

// shownSteps returns the steps of a critical path that summary shows: all
// of them, or, of a longer path than summaryPathMax, those that bounded
// the session most, kept in path order.
func shownSteps(path []explain.Step) []explain.Step {
	if len(path) <= summaryPathMax {
		return path
	}
	byCritical := slices.Clone(path)
	slices.SortStableFunc(byCritical, func(a, b explain.Step) int { return cmp.Compare(b.Critical, a.Critical) })
	keep := map[uint64]bool{}
	for _, st := range byCritical[:summaryPathMax] {
		keep[st.Seq] = true
	}
	return slices.DeleteFunc(slices.Clone(path), func(st explain.Step) bool { return !keep[st.Seq] })
}

// printPath writes the critical path of a session: the records that
// bounded its duration, each with the time it alone held the session up.
func printPath(w io.Writer, s *summary) error {
	if len(s.path) == 0 {
		return nil
	}
	shown := shownSteps(s.path)
	if s.requests > 1 {
		var held time.Duration
		for _, st := range s.path {
			held += st.Critical
		}
		if _, err := fmt.Fprintf(w, "\ncritical path of session %s, in its longest of %d requests (from seq %d): %s, bounded by %s\n",
			s.ID, s.requests, s.path[0].Seq, formatDuration(held), plural(len(s.path), "record")); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintf(w, "\ncritical path of session %s: %s, bounded by %s\n",
		s.ID, formatDuration(s.sum.End), plural(len(s.path), "record")); err != nil {
		return err
	}
	t := newTable(w)
	if err := t.row("  OFFSET", "WALL", "HELD UP", "KIND", "RECORD"); err != nil {
		return err
	}
	for _, st := range shown {
		n := s.nodes[st.Seq]
		indent := strings.Repeat("  ", min(n.depth, maxIndent))
		if err := t.row("  "+formatDuration(n.offset), formatDuration(n.wall), formatDuration(st.Critical),
			n.kind, indent+orDash(n.name)); err != nil {
			return err
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if left := len(s.path) - len(shown); left > 0 {
		_, err := fmt.Fprintf(w, "  and %s that held it up less (summary --json lists the whole path)\n", plural(left, "record"))
		return err
	}
	return nil
}

// formatPID formats a process id, or "-" for a session known only by the
// records it left.
func formatPID(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// formatTotals formats each kind's count and time as "kind=count/time",
// in kind order, the time counted once (records of the kind inside or
// beside one another add only what the others did not cover), and the
// share of the session it is: compile=4/50ms(56%).
func formatTotals(s explain.Summary) string {
	var b strings.Builder
	for i, k := range s.Kinds {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(formatString(k.Kind))
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(k.Records))
		b.WriteByte('/')
		b.WriteString(formatDuration(k.Wall))
		if s.End > 0 {
			b.WriteString("(" + strconv.Itoa(int(math.Round(100*float64(k.Wall)/float64(s.End)))) + "%)")
		}
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
		b.WriteString(formatDuration(kr.Record.Wall))
	}
	return b.String()
}
