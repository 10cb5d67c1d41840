package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
)

func (a *app) compactCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Give back the disk space of deleted records",
		Long: `Compact the store: give back the disk space that deleted records still
hold, and say how much. A prune deletes records, but the database keeps
their bytes, and a marker for each deletion, until it compacts, which it
does only as the store grows; compact does it now. It also merges the many
small tables that many short sessions leave.

Sizes count the store's tables and sealed value-log files. Compacting needs
the store to itself: it fails, and changes nothing, while another process
has the store open. It can take a while on a large store.

With --json, one JSON object: before_bytes, after_bytes, freed_bytes.`,
		Example: `  records prune --keep 5 && records compact
  records compact --dir ./build/records --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.change(cmd, func(dir string, st *badgerstore.Store) error {
				before, after, err := st.Compact()
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return api.NewEncoder(out).Encode(api.Compact{Before: before, After: after, Freed: before - after})
				}
				_, err = fmt.Fprintf(out, "compacted %s: %s → %s, %s given back\n",
					render.Clean(dir), render.Bytes(before), render.Bytes(after), render.Bytes(max(before-after, 0)))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sizes as one JSON object")
	return cmd
}
