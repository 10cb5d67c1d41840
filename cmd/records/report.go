package main

import (
	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/report"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) reportCommand() *cobra.Command {
	var (
		output  string
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "report [--session ID] -o report.html",
		Short: "Write one session as a self-contained HTML report",
		Long: `Write a session (the newest, or the one --session names) as one HTML file
that any browser opens offline: no network, no external script or style.

It shows the session (id, label, start, process, duration, Resource), a
summary per kind (records; what they did: changed, missed, hits, and the
hits the session's tally counted, let go and not kept, with the kind's hit
rate; time, counted once however its records nest or overlap; mean and
longest wall time), the critical path (the chain of
records that bounded its longest request: the roots of one trace), the
slowest records, the timeline drawn as bars (one per record, under the
record of its parent span, records that ran at once on rows of their own,
the critical path outlined; hover over a bar for its details, its label in
full and its effect), and a table per kind with its effect and attributes
as columns.

A session with more than 40 roots whose names repeat (a server's, a root
per request) has them grouped by kind and name: a table of the groups
(count, median, p90 and max wall), the 5 slowest roots drawn whole, and a
row per group where the others are drawn merged where they touch. No bar
is drawn narrower than a pixel. A timeline draws at most 20,000 bars (the longest records), and a table
lists at most 500 records of its kind; an attribute value shows at most
1 KiB, and a bar's details at most 4 KiB; the page says what it left out
or cut.
Every record field is escaped, and the page's Content Security Policy lets
nothing but its own script run. Without -o the page goes to standard
output. Progress is shown on standard error when it is a terminal.`,
		Example: `  records report -o report.html
  records report --session 1735787045006000000 -o build.html
  records report --dir ./build/records > report.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			return a.read(cmd, func(r *sessions.Records) error {
				s, err := pickSession(r, session)
				if err != nil {
					return err
				}
				prog := newProgress(cmd.ErrOrStderr(), "report")
				defer prog.finish()
				o := report.Options
				o.Progress = prog.update
				rep, err := summary.NewReport(r, s, o)
				if err != nil {
					return err
				}
				prog.setTotal(int64(rep.Total))
				page, err := report.Build(r, rep, prog.update)
				if err != nil {
					return err
				}
				return writeOutput(cmd, output, page.Write)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this `file` (default: standard output)")
	session.register(cmd, "report on the session with this `id` (default: the newest)")
	return cmd
}
