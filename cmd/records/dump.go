package main

import (
	"bufio"
	"fmt"
	"iter"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) dumpCommand() *cobra.Command {
	var (
		asJSON  bool
		kind    string
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "dump",
		Short: "Print records in the order they were stamped",
		Long: `Print records in stamp order: by session, oldest first, then by each
record's seq, the order it was stamped in across every kind. Without --kind
every kind is printed, merged into that one order.

Each text line is: session, seq, offset from the session's start, kind,
name (a mark's label), wall time, effect (changed: the record did the work,
observed: it changed nothing, as a cache hit; "-" for records of older
stores, which do not say), and the attributes as key=value.`,
		Example: `  records dump
  records dump --kind autotune
  records dump --session 1735787045006000000 --json
  records dump --json | jq -c 'select(.status.code == "error")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			opts := session.readOptions()
			var kinds []string
			if cmd.Flags().Changed("kind") {
				k, err := keys.CheckKind(kind)
				if err != nil {
					return usageError{Err: fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				if err := session.need(r); err != nil {
					return err
				}
				if kinds == nil {
					var err error
					if kinds, err = r.Kinds(); err != nil {
						return err
					}
				} else if err := needKind(r, kinds[0]); err != nil {
					return err
				}
				return dump(cmd, r.InStampOrder(kinds, opts...), asJSON)
			})
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "print only records of this `kind` (e.g. marks)")
	session.register(cmd, "print only records of the session with this `id`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	return cmd
}

// dump prints records, as JSON Lines or as aligned text.
func dump(cmd *cobra.Command, records iter.Seq2[sessions.KindRecord, error], asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if !asJSON {
		if err := render.Records(out, records); err != nil {
			out.Flush() // show what was read before the error
			return err
		}
		return out.Flush()
	}
	enc := api.NewEncoder(out)
	for kr, err := range records {
		if err != nil {
			out.Flush() // show what was read before the error
			return err
		}
		if err := enc.Encode(api.NewRecord(kr)); err != nil {
			return err
		}
	}
	return out.Flush()
}
