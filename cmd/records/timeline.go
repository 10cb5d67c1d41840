package main

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) timelineCommand() *cobra.Command {
	var (
		asJSON  bool
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "timeline",
		Short: "Show each session as a tree of marks and the records inside them",
		Long: `Show each session, oldest first, as a tree: its marks (the named stretches
of work a program marks, like "load weights"), nested by containment, and
inside each mark the records stamped while it was open, in stamp order. A
record (a mark too) lies inside a mark when it was stamped after it, and
its offset falls within the mark's offset and offset + wall; it hangs
under the innermost such mark. Records outside every mark are at the top.

Each line is: the offset from the session's start, the wall time, the kind,
and the name (a mark's label), indented under its mark.

With --json, one JSON object per session and line: id, started_unix_ms,
label, duration_ns, and records: the top of the tree, each node
{kind, seq, offset_ns, wall_ns, name, attributes, children}.`,
		Example: `  records timeline
  records timeline --session 1735787045006000000
  records timeline --json | jq '.records[] | select(.kind == "marks") | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			return a.read(cmd, func(r *sessions.Records) error {
				return timeline(cmd, r, session, asJSON)
			})
		},
	}
	session.register(cmd, "show only the session with this `id`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per session, one per line")
	return cmd
}

// node is a record in a session's tree, with the records inside it.
type node struct {
	kindRecord
	children []*node
}

// tree is one session's timeline: its top-level records, each with those
// inside it.
type tree struct {
	sessions.Session
	end   time.Duration
	roots []*node
	open  []*node // the marks open at the last record, outermost first
}

// add hangs a record, which comes in stamp order, under the innermost open
// mark that contains it. Marks that do not contain it are closed: a record
// stamped later starts no earlier, so none of them can contain a later one
// either (offsets follow seqs, up to the small jitter of concurrent stamps).
func (t *tree) add(kr kindRecord) {
	t.end = sessionEnd(t.end, kr.Stamp, kr.Record.Wall)
	n := &node{kindRecord: kr}
	for len(t.open) > 0 && !contains(t.open[len(t.open)-1], kr.Stamp) {
		t.open = t.open[:len(t.open)-1]
	}
	if len(t.open) == 0 {
		t.roots = append(t.roots, n)
	} else {
		parent := t.open[len(t.open)-1]
		parent.children = append(parent.children, n)
	}
	if kr.Kind == sessions.MarksKind {
		t.open = append(t.open, n)
	}
}

// contains reports whether a record stamped at st lies inside mark: its
// offset is within the mark's offset and offset + wall (SPEC §1; its seq,
// later in stamp order, is higher).
func contains(mark *node, st sessions.Stamp) bool {
	from := mark.Stamp.Offset
	return from <= st.Offset && st.Offset <= from+mark.Record.Wall
}

func timeline(cmd *cobra.Command, r *sessions.Records, f sessionFlag, asJSON bool) error {
	opts := f.readOptions()
	rows, err := sessionRows(r, opts...)
	if err != nil {
		return err
	}
	kinds, err := r.Kinds()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	enc := jsonLines(out)
	var t *tree
	first, seen := true, false
	err = eachSession(rows, inStampOrder(r, kinds, opts...), sessionVisitor{
		begin: func(s sessions.Session) error {
			t, seen = &tree{Session: s}, true
			return nil
		},
		record: func(kr kindRecord) error {
			t.add(kr)
			return nil
		},
		end: func(sessions.Session) error {
			if asJSON {
				return enc.Encode(t.json())
			}
			if !first {
				if _, err := io.WriteString(out, "\n"); err != nil {
					return err
				}
			}
			first = false
			return t.print(out)
		},
	})
	if err != nil {
		out.Flush() // show what was read before the error
		return err
	}
	if f.set && !seen {
		return f.missing()
	}
	return out.Flush()
}

// print writes the tree as an indented table under a line naming the
// session.
func (t *tree) print(w io.Writer) error {
	label := ""
	if t.Label != "" {
		label = "  " + clean(t.Label)
	}
	if _, err := fmt.Fprintf(w, "session %s%s  started %s  lasted %s\n",
		t.ID, label, formatTime(time.UnixMilli(t.StartedUnixMs)), t.end); err != nil {
		return err
	}
	if len(t.roots) == 0 {
		_, err := io.WriteString(w, "(no records)\n")
		return err
	}
	tab := newTable(w)
	if err := tab.row("OFFSET", "WALL", "KIND", "RECORD"); err != nil {
		return err
	}
	// Top-level records start at the margin; the records inside a mark
	// hang under it on tree branches.
	var walk func(nodes []*node, indent string, top bool) error
	walk = func(nodes []*node, indent string, top bool) error {
		for i, n := range nodes {
			branch, below := "├─ ", "│  "
			switch {
			case top:
				branch, below = "", ""
			case i == len(nodes)-1:
				branch, below = "└─ ", "   "
			}
			if err := tab.row(n.Stamp.Offset.String(), n.Record.Wall.String(), n.Kind,
				indent+branch+orDash(n.Record.Name)); err != nil {
				return err
			}
			if err := walk(n.children, indent+below, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(t.roots, "", true); err != nil {
		return err
	}
	return tab.flush()
}

// timelineJSON is a session as `records timeline --json` prints it.
type timelineJSON struct {
	ID            sessions.SessionID `json:"id"`
	StartedUnixMs int64              `json:"started_unix_ms"`
	Label         string             `json:"label"`
	DurationNs    int64              `json:"duration_ns"`
	Records       []nodeJSON         `json:"records"`
}

// nodeJSON is a record in the tree, with the records inside it.
type nodeJSON struct {
	Kind       string         `json:"kind"`
	Seq        uint64         `json:"seq"`
	OffsetNs   int64          `json:"offset_ns"`
	WallNs     int64          `json:"wall_ns"`
	Name       string         `json:"name"`
	Attributes sessions.Attrs `json:"attributes"`
	Children   []nodeJSON     `json:"children"`
}

func (t *tree) json() timelineJSON {
	return timelineJSON{
		ID:            t.ID,
		StartedUnixMs: t.StartedUnixMs,
		Label:         t.Label,
		DurationNs:    int64(t.end),
		Records:       nodesJSON(t.roots),
	}
}

func nodesJSON(nodes []*node) []nodeJSON {
	out := make([]nodeJSON, len(nodes)) // [] rather than null for none
	for i, n := range nodes {
		out[i] = nodeJSON{
			Kind:       n.Kind,
			Seq:        n.Stamp.Seq,
			OffsetNs:   int64(n.Stamp.Offset),
			WallNs:     int64(n.Record.Wall),
			Name:       n.Record.Name,
			Attributes: n.Record.Attributes,
			Children:   nodesJSON(n.children),
		}
	}
	return out
}
