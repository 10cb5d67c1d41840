package main

import (
	"bufio"
	"io"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

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

// timeline prints each session's tree, as text or, record by record, as
// JSON.
func timeline(cmd *cobra.Command, r *sessions.Records, f sessionFlag, asJSON, all bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	seen := false
	v := explain.Visitor{Begin: func(sessions.Session) error { seen = true; return nil }}
	if asJSON {
		// Each record as it is read, placed in its session's tree: a few
		// words per span held, never the tree.
		enc := api.NewEncoder(out)
		var ns explain.Nesting
		v.Record = func(kr sessions.KindRecord) error { return enc.Encode(api.NewTimelineRecord(kr, ns.Place(kr))) }
	} else {
		var b explain.TreeBuilder
		first := true
		v.Record = b.Add // a tree holds a few words a record, never the record
		v.End = func(s sessions.Session) error {
			if !first {
				if _, err := io.WriteString(out, "\n"); err != nil {
					return err
				}
			}
			first = false
			return render.Tree(out, r, s, b.Tree(), all)
		}
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
