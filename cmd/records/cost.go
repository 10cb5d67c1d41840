package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/views"
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
children that changed nothing, and inside which nothing changed (a
candidate benchmarked and not kept; a lookup inside which a compile
changed something did not change nothing), read from the effect each
record stores; "unknown" for records of stores written before records
kept their effect.

Work and hits: each piece of work (a kind, a name and its key attributes,
"key" and those ending in ".key") recorded more than once, a row each,
counted by the rule records why KIND KEY=VALUE tells record by record.
Its columns are what a cache counts itself, summed over its instances, so
a row can be checked against the cache's own hit and miss counters:

  TIMES        how many records of it: HITS + MISSES (a cache's lookups)
  SESSIONS     how many sessions recorded it
  TIME         the time in all of them
  REDONE       misses of a key their instance had already done (or found
               done), earlier in the session or in an earlier one:
               the cache lost it (evicted, expired, a restart) or was
               asked other inputs; REDONE TIME is their time
  RACED        misses that did the work while another record of the key,
               in the same session, was still doing it: of requests that
               computed it at once, every one but the first to start
  NEW HERE     misses that were the first of the key on their instance
               (another service.instance.id or host.name) after another
               instance had done it: a cache of its own, never redone
  HITS         records that changed nothing, and inside which nothing
               changed: the work found done (a cache hit, a lookup that
               finds what an earlier lookup filled); HIT TIME their time.
               "390 (389 tallied)": 389 of them were let go, not kept,
               and counted in the session's tally (not judged by instance)
  MISSES       every record that was not a hit: the work was done, by the
               record (it changed something: a lookup that filled the
               cache, a compile) or inside it (an observed lookup inside
               which a compute changed something), or the record does not
               say (a store written before records kept their effect)

Every miss is one of: the first record of the key in the store (new),
NEW HERE, RACED or REDONE; so MISSES = NEW HERE + RACED + REDONE, plus one
when the key's first record was a miss. A lookup whose span is the record
(changed on a miss, observed on a hit) and an observed lookup around a
compute record count the same: a miss of either is a miss of the lookup,
and in the second shape each compute is a row of its own, every record
of it a miss. Marks are left out: they are phases a program names,
which every run has again.

A kept session's tally counts the records keep-what-changed let go,
all hits, by kind, name and key: they are in TIMES, HITS and TIME. A
session of a store written before tallies has none, and cost says its
hits are of kept records only.

Each table lists the --top rows with the most time, 20 by default (0 for
all). With --json, one JSON object per row and line: for children, table
"children", parent, child, parents, children, wall_ns and
changed_nothing_ns (null when not known); for work, table "redone", kind,
name, key (the key attributes), records (TIMES), sessions, wall_ns,
redone, redone_ns, raced, raced_ns, new_here, hits, hit_ns, tallied,
tallied_ns (of hits and hit_ns, the tallied) and misses, as the columns
above; last, table "tallies": sessions, untallied (those with no tally)
and over (keys counted under their kind alone) (docs/FORMAT.md §8.4).`,
		Example: `  records cost
  records cost --top 0 --json | jq -c 'select(.table == "redone")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if top < 0 {
				return usageError{Err: errors.New("--top must not be negative")}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				w, sum, err := views.Rework(cmd.Context(), r)
				if err != nil {
					return err
				}
				return views.Cost(cmd.OutOrStdout(), w, sum, top, asJSON)
			})
		},
	}
	cmd.Flags().IntVar(&top, "top", defaultCostTop, "list at most `N` rows of each table (0 for all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per row, one per line")
	return cmd
}
