package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) showCommand() *cobra.Command {
	var (
		asJSON  bool
		where   []string
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "show KIND",
		Short: "Show one kind's records as a table, attributes as columns",
		Long: `Show the records of one kind in stamp order as a table: session, seq,
offset, name, wall time and effect (changed, observed, or "-" for records
that do not say), then a column per attribute key, in key order
("-" where a record has none). An attribute gets a column when at least one
shown record in 10 has it, and only the 16 most common do; the others are
printed as key=value in a last column, OTHER.

--where key=value keeps the records whose attribute key has that value, as
the table prints it (2, true, 1.5, matmul); a list matches when one of its
elements does. Several --where must all hold.

With --json, one JSON object per record and line, as records dump --json
prints them (docs/FORMAT.md).`,
		Example: `  records show autotune
  records show autotune --where autotune.key=matmul_1024 --where winner=tiled
  records show compile --session 1735787045006000000 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			session.parse(cmd)
			kind, err := keys.CheckKind(args[0])
			if err != nil {
				return usageError{Err: fmt.Errorf("kind %q: %w", args[0], err)}
			}
			filters, err := parseWhere(where)
			if err != nil {
				return err
			}
			return a.read(cmd, func(r *sessions.Records) error {
				if err := needKind(r, kind); err != nil {
					return err
				}
				if err := session.need(r); err != nil {
					return err
				}
				return show(cmd, r, kind, filters, session.readOptions(), asJSON)
			})
		},
	}
	session.register(cmd, "show only the records of the session with this `id`")
	cmd.Flags().StringArrayVar(&where, "where", nil, "keep records whose attribute has this value, as `key=value` (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	return cmd
}

// parseWhere reads --where key=value flags.
func parseWhere(where []string) ([]render.Filter, error) {
	filters := make([]render.Filter, len(where))
	for i, w := range where {
		f, err := render.ParseFilter(w)
		if err != nil {
			return nil, usageError{Err: fmt.Errorf("--where %w", err)}
		}
		filters[i] = f
	}
	return filters, nil
}

// show prints the records of one kind that pass the filters.
func show(cmd *cobra.Command, r *sessions.Records, kind string, filters []render.Filter, opts []sessions.ReadOption, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if !asJSON {
		if err := render.Show(out, r, kind, filters, opts...); err != nil {
			out.Flush()
			return err
		}
		return out.Flush()
	}
	enc := api.NewEncoder(out)
	for rec, err := range r.All(kind, opts...) {
		if err != nil {
			out.Flush()
			return err
		}
		if render.Matches(rec.Record, filters) {
			if err := enc.Encode(api.NewRecord(sessions.KindRecord{Kind: kind, Stamped: rec})); err != nil {
				return err
			}
		}
	}
	return out.Flush()
}
