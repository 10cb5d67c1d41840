package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// maxIndent is how many levels the text timeline indents at most: a
// session nested thousands deep stays readable at any width, and the
// records deeper than this show their depth as a number.
const maxIndent = 32

func (a *app) timelineCommand() *cobra.Command {
	var (
		asJSON  bool
		all     bool
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "timeline",
		Short: "Show each session as a tree: every record under the one it ran inside",
		Long: `Show each session, oldest first, as a tree of its records nested by parent
span: a record hangs under the record of its parent span, when that span was
recorded in the session; else it is at the top. Records are never nested
because their times overlap: four requests served at once are four records
at the top, side by side. Siblings are in stamp order.

Each line is: the offset from the session's start, the wall time, the
effect (changed: the record did the work; observed: it changed nothing, as
a cache hit; "-" for records of older stores, which do not say), the kind,
and the name (a mark's label), indented under its parent. Indentation stops
at 32 levels; a record deeper than that shows its depth, as [depth 40].

A session with more than 40 roots whose names repeat (a server's, a root
per request) is summed up rather than printed whole: its roots grouped by
kind and name (how many, their median, 90th percentile and longest wall,
and the seq of the slowest), then the 5 slowest roots with the records
inside them. --all prints every root.

With --json, one JSON object per record and line, in stamp order: session,
seq, parent_seq (null for a record at the top), depth (0 at the top), kind,
name, offset_ns, wall_ns and effect ("changed", "observed", or null).`,
		Example: `  records timeline
  records timeline --session 1735787045006000000
  records timeline --json | jq -c 'select(.depth == 0)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			return a.read(cmd, func(r *sessions.Records) error {
				return timeline(cmd, r, session, asJSON, all)
			})
		},
	}
	session.register(cmd, "show only the session with this `id`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	cmd.Flags().BoolVar(&all, "all", false, "print every root of a session, however many (a server's requests)")
	return cmd
}

func timeline(cmd *cobra.Command, r *sessions.Records, f sessionFlag, asJSON, all bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	var v explain.Visitor
	seen := false
	if asJSON {
		v = timelineJSONVisitor(out, &seen)
	} else {
		v = timelineTextVisitor(out, r, &seen, all)
	}
	if err := explain.Walk(r, v, f.readOptions()...); err != nil {
		out.Flush() // show what was read before the error
		return err
	}
	if f.set && !seen {
		return f.missing()
	}
	return out.Flush()
}

// timelineTextVisitor builds each session's tree and prints it.
func timelineTextVisitor(out io.Writer, r *sessions.Records, seen *bool, all bool) explain.Visitor {
	var b explain.TreeBuilder
	first := true
	return explain.Visitor{
		Begin: func(sessions.Session) error {
			*seen = true
			return nil
		},
		Record: b.Add, // a tree holds a few words a record, never the record
		End: func(s sessions.Session) error {
			if !first {
				if _, err := io.WriteString(out, "\n"); err != nil {
					return err
				}
			}
			first = false
			return printTree(out, r, s, b.Tree(), all)
		},
	}
}

// printTree writes a session's tree as an indented table under a line
// naming the session.
func printTree(w io.Writer, r *sessions.Records, s sessions.Session, t *explain.SessionTree, all bool) error {
	label := ""
	if s.Label != "" {
		label = "  " + clean(s.Label)
	}
	if _, err := fmt.Fprintf(w, "session %s%s  started %s  lasted %s\n",
		s.ID, label, formatTime(time.UnixMilli(s.StartedUnixMs)), formatDuration(t.Summary().End)); err != nil {
		return err
	}
	if t.Len() == 0 {
		_, err := io.WriteString(w, "(no records)\n")
		return err
	}
	var expanded map[uint64]bool // the roots printed, when not all
	if !all {
		var err error
		if expanded, err = printRootGroups(w, r, t); err != nil {
			return err
		}
	}
	tab := newTable(w)
	if err := tab.row("OFFSET", "WALL", "EFFECT", "KIND", "RECORD"); err != nil {
		return err
	}
	// Roots start at the margin; the records inside one hang under it on
	// branches. more[d] says whether the record at depth d on the way
	// down has a sibling still to come, so its column carries a │.
	more := make([]bool, 0, maxIndent+1)
	n := 0
	var root uint64
	for node := range t.Walk() {
		if node.Depth == 0 {
			root = node.Seq
		}
		if expanded != nil && !expanded[root] {
			continue // summed up by printRootGroups
		}
		next := t.NextSibling(node) != nil
		depth := int(node.Depth)
		if depth <= maxIndent {
			more = append(more[:depth], next)
		}
		name, err := nodeName(r, t, node)
		if err != nil {
			return err
		}
		if err := tab.row(formatDuration(node.Offset), formatDuration(node.Wall), nodeEffectCell(node), t.Kind(node),
			branches(more, depth, next)+orDash(name)); err != nil {
			return err
		}
		// A tabwriter holds everything until flushed: keep a long
		// session's memory bounded, as dump does.
		if n++; n%dumpFlushEvery == 0 {
			if err := tab.flush(); err != nil {
				return err
			}
		}
	}
	return tab.flush()
}

// branches returns the tree drawing before a record at depth: a column
// per level above it (│ where the record at that level has siblings still
// to come), then its own branch: ├─, or └─ for the last of its siblings
// (next says which). Past maxIndent levels the drawing stops growing and
// says the depth.
// printRootGroups sums up the roots of a session that has more than a
// screenful whose names repeat: a table of them by kind and name, and a
// line naming the slowest, which the tree below prints whole. It returns
// their seqs, or nil (and prints nothing) when the roots are printed
// each.
func printRootGroups(w io.Writer, r *sessions.Records, t *explain.SessionTree) (map[uint64]bool, error) {
	roots := 0
	for range t.Roots() {
		roots++
	}
	if roots <= reportScreenRoots {
		return nil, nil
	}
	groups := t.RootGroups()
	if len(groups)*reportGroupShare > roots {
		return nil, nil // names that do not repeat group nothing
	}
	if _, err := fmt.Fprintf(w, "%d roots, by kind and name (records timeline --all prints each):\n", roots); err != nil {
		return nil, err
	}
	tab := newTable(w)
	if err := tab.row("  KIND", "NAME", "ROOTS", "MEDIAN", "P90", "MAX", "SLOWEST SEQ"); err != nil {
		return nil, err
	}
	for _, g := range groups {
		name, err := groupName(r, t, g)
		if err != nil {
			return nil, err
		}
		if err := tab.row("  "+g.Kind, orDash(name), strconv.Itoa(g.Count), formatDuration(g.Median),
			formatDuration(g.P90), formatDuration(g.Max), strconv.FormatUint(g.Slowest, 10)); err != nil {
			return nil, err
		}
	}
	if err := tab.flush(); err != nil {
		return nil, err
	}
	slowest := t.SlowestRoots(reportExpandRoots)
	if _, err := fmt.Fprintf(w, "the %d slowest roots, whole:\n", len(slowest)); err != nil {
		return nil, err
	}
	expanded := make(map[uint64]bool, len(slowest))
	for _, seq := range slowest {
		expanded[seq] = true
	}
	return expanded, nil
}

func branches(more []bool, depth int, next bool) string {
	if depth == 0 {
		return ""
	}
	var b strings.Builder
	for d := 1; d < min(depth, maxIndent); d++ {
		if more[d] {
			b.WriteString("│  ")
		} else {
			b.WriteString("   ")
		}
	}
	if depth >= maxIndent {
		b.WriteString("[depth " + strconv.Itoa(depth) + "] ")
	}
	if next {
		b.WriteString("├─ ")
	} else {
		b.WriteString("└─ ")
	}
	return b.String()
}

// timelineRecordJSON is a record as `records timeline --json` prints it.
type timelineRecordJSON struct {
	Session   sessions.SessionID `json:"session,string"`
	Seq       uint64             `json:"seq"`
	ParentSeq *uint64            `json:"parent_seq"`
	Depth     int                `json:"depth"`
	Kind      string             `json:"kind"`
	Name      string             `json:"name"`
	OffsetNs  int64              `json:"offset_ns"`
	WallNs    int64              `json:"wall_ns"`
	Effect    *string            `json:"effect"`
}

// timelineJSONVisitor prints every record as it is read, placed in its
// session's tree: a few words per span held, never the tree.
func timelineJSONVisitor(out io.Writer, seen *bool) explain.Visitor {
	enc := jsonLines(out)
	var ns explain.Nesting
	return explain.Visitor{
		Begin: func(sessions.Session) error {
			*seen = true
			return nil
		},
		Record: func(kr kindRecord) error {
			n := ns.Place(kr)
			j := timelineRecordJSON{
				Session:  kr.Stamp.Session,
				Seq:      kr.Stamp.Seq,
				Depth:    n.Depth,
				Kind:     kr.Kind,
				Name:     kr.Record.Name,
				OffsetNs: int64(kr.Stamp.Offset),
				WallNs:   int64(kr.Record.Wall),
				Effect:   effectOf(&kr.Record),
			}
			if n.Depth > 0 {
				j.ParentSeq = &n.ParentSeq
			}
			return enc.Encode(j)
		},
	}
}
