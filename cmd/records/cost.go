package main

import (
	"bufio"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// defaultCostTop is how many rows of each table cost prints.
const defaultCostTop = 20

func (a *app) costCommand() *cobra.Command {
	var (
		asJSON bool
		top    int
	)
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Show work that may have been wasted: time in children, and work redone",
		Long: `Add up, across every session of the store, work that may have been wasted.

Children: what the records of each kind spent in the records inside them,
by the children's kind (an autotune in its candidates, a build's mark in
its compiles): how many parents had such children, how many children, the
time in them (concurrent children each counted), and of it the time in
children that changed nothing (a candidate benchmarked and not kept).
Records do not store yet whether they changed anything, so that column
says "unknown" until they do.

Redone: records of one kind and name recorded more than once (a key tuned
in one session and tuned again in the next): how many times, in how many
sessions, the time in all of them, and the time spent doing it again (all
but the first). Marks are left out: they are phases a program names, which
every run has again. records why KIND KEY=VALUE says why each was done.

Each table lists the --top rows with the most time, 20 by default (0 for
all). With --json, one JSON object per row and line: for children, table
"children", parent, child, parents, children, wall_ns and
changed_nothing_ns (null when not known); for work redone, table "redone",
kind, name, records, sessions, wall_ns and redone_ns.`,
		Example: `  records cost
  records cost --top 0 --json | jq -c 'select(.table == "redone")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if top < 0 {
				return usageError{errors.New("--top must not be negative")}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				w, err := rework(r)
				if err != nil {
					return err
				}
				return printCost(cmd, w, top, asJSON)
			})
		},
	}
	cmd.Flags().IntVar(&top, "top", defaultCostTop, "list at most `N` rows of each table (0 for all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per row, one per line")
	return cmd
}

// rework adds up every session of the store, one tree at a time.
func rework(r *sessions.Records) (*explain.Rework, error) {
	rows, err := sessionRows(r)
	if err != nil {
		return nil, err
	}
	kinds, err := r.Kinds()
	if err != nil {
		return nil, err
	}
	var (
		w explain.Rework
		b explain.TreeBuilder
	)
	err = eachSession(rows, inStampOrder(r, kinds), sessionVisitor{
		begin: func(sessions.Session) error { return nil },
		record: func(kr kindRecord) error {
			kr.Record = compactRecord(kr.Record) // a tree holds every record of the session
			return b.Add(kr)
		},
		end: func(sessions.Session) error {
			w.Add(b.Tree())
			return nil
		},
	})
	return &w, err
}

type childCostJSON struct {
	Table            string `json:"table"`
	Parent           string `json:"parent"`
	Child            string `json:"child"`
	Parents          int    `json:"parents"`
	Children         int    `json:"children"`
	WallNs           int64  `json:"wall_ns"`
	ChangedNothingNs *int64 `json:"changed_nothing_ns"`
}

type redoneJSON struct {
	Table    string `json:"table"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Records  int    `json:"records"`
	Sessions int    `json:"sessions"`
	WallNs   int64  `json:"wall_ns"`
	RedoneNs int64  `json:"redone_ns"`
}

func printCost(cmd *cobra.Command, w *explain.Rework, top int, asJSON bool) error {
	children, redone := w.Children(), w.Redone()
	// Marks are phases a program names: every run has them again.
	redone = slices.DeleteFunc(redone, func(k explain.KeyWork) bool { return k.Kind == sessions.MarksKind })
	leftChildren, leftRedone := 0, 0
	if top > 0 {
		leftChildren, leftRedone = max(len(children)-top, 0), max(len(redone)-top, 0)
		children, redone = children[:min(top, len(children))], redone[:min(top, len(redone))]
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		for _, c := range children {
			j := childCostJSON{"children", c.Parent, c.Child, c.Parents, c.Children, int64(c.Wall), nil}
			if c.UnchangedKnown {
				n := int64(c.Unchanged)
				j.ChangedNothingNs = &n
			}
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
		for _, k := range redone {
			if err := enc.Encode(redoneJSON{"redone", k.Kind, k.Name, k.Records, k.Sessions, int64(k.Wall), int64(k.Redone)}); err != nil {
				return err
			}
		}
		return out.Flush()
	}

	if len(children) == 0 {
		fmt.Fprintln(out, "Time in children: no record has records inside it.")
	} else {
		fmt.Fprintln(out, "Time in children: what records of a kind spent in the records inside them")
		t := newTable(out)
		if err := t.row("PARENT", "CHILD", "PARENTS", "CHILDREN", "TIME", "CHANGED NOTHING"); err != nil {
			return err
		}
		for _, c := range children {
			unchanged := "unknown"
			if c.UnchangedKnown {
				unchanged = formatDuration(c.Unchanged) + " in " + childCount(c.UnchangedChildren)
			}
			if err := t.row(c.Parent, c.Child, strconv.Itoa(c.Parents), strconv.Itoa(c.Children), formatDuration(c.Wall), unchanged); err != nil {
				return err
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		if leftChildren > 0 {
			fmt.Fprintf(out, "and %d more (--top 0 lists them all)\n", leftChildren)
		}
	}
	fmt.Fprintln(out)
	if len(redone) == 0 {
		fmt.Fprintln(out, "Redone: no record was recorded more than once.")
	} else {
		fmt.Fprintln(out, "Redone: records of one kind and name recorded more than once")
		t := newTable(out)
		if err := t.row("KIND", "RECORD", "TIMES", "SESSIONS", "TIME", "AGAIN"); err != nil {
			return err
		}
		for _, k := range redone {
			if err := t.row(k.Kind, orDash(k.Name), strconv.Itoa(k.Records), strconv.Itoa(k.Sessions),
				formatDuration(k.Wall), formatDuration(k.Redone)); err != nil {
				return err
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		if leftRedone > 0 {
			fmt.Fprintf(out, "and %d more (--top 0 lists them all)\n", leftRedone)
		}
	}
	return out.Flush()
}

// childCount says how many children, in English.
func childCount(n int) string {
	if n == 1 {
		return "1 child"
	}
	return strconv.Itoa(n) + " children"
}
