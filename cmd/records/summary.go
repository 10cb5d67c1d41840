package main

import (
	"bufio"
	"errors"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain/summary"
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
time's share of the session (kind=count/time(share)); the hit rate of
each kind with a hit (kind=hits/lookups(share)): its kept hits and the
hits its tally counted (records let go, not kept), against its kept
records that were not hits, "no tally" for a session written before
tallies (its hits are of kept records only); and its slowest records
(name=wall, slowest first).

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
a record before the records on the path inside it), hits (kind -> {hits,
tallied, tallied_ns, misses}) and tallied (false without a tally). Records whose session row is
gone (another process pruned it while it ran) are summarised under their
session's id, with an empty label and process 0.`,
		Example: `  records summary
  records summary --top 10 --session 1735787045006000000
  records summary --json | jq -r '"\(.label): \(.duration_ns / 1e9)s"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			if top < 0 {
				return usageError{Err: errors.New("--top must not be negative")}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				sums, err := summary.Sessions(r, summary.Options{Slowest: top, Named: render.PathNamed}, session.readOptions()...)
				if err != nil {
					return err
				}
				if session.set && len(sums) == 0 {
					return session.missing()
				}
				out := bufio.NewWriter(cmd.OutOrStdout())
				if asJSON {
					enc := api.NewEncoder(out)
					for _, s := range sums {
						if err := enc.Encode(api.NewSummary(s)); err != nil {
							return err
						}
					}
				} else if err := render.Summaries(out, sums); err != nil {
					return err
				}
				return out.Flush()
			})
		},
	}
	session.register(cmd, "summarise only the session with this `id`")
	cmd.Flags().IntVar(&top, "top", defaultTop, "show this many of each session's slowest records")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per session, one per line")
	return cmd
}
