package main

import (
	"bufio"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) pruneCommand() *cobra.Command {
	var (
		asJSON bool
		keep   int
		all    bool
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "prune --keep N | --all",
		Short: "Delete every session but the newest N, with their records",
		Long: `Delete every session but the newest N, with their records, and print what
went: each pruned session's id, start, label and records per kind. Records
of any session at or below the newest pruned one go too, whether or not
their session row is still there (a process whose session another process
pruned while it ran leaves such records). --all, and only --all, deletes
every session; --keep must be 1 or more.

Pruning needs the store to itself: it fails, and changes nothing, while
another process has the store open. Deleted records give their disk space
back once the store is compacted: run records compact after a prune.

--dry-run prints what would go, and deletes nothing. With --json, one JSON
object per pruned session and line, as records sessions --json prints it.`,
		Example: `  records prune --keep 20
  records prune --keep 1 --dry-run
  records prune --keep 5 && records compact
  records prune --all --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch gaveKeep := cmd.Flags().Changed("keep"); {
			case all && gaveKeep:
				return usageError{Err: errors.New("give --keep N or --all, not both")}
			case all:
				keep = 0
			case !gaveKeep:
				return usageError{Err: errors.New("say how many sessions to keep, with --keep N (or delete them all with --all)")}
			case keep == 0:
				// A count that defaults to 0 must not delete everything
				// when a script's variable comes out empty or zero.
				return usageError{Err: errors.New("--keep 0 would delete every session: say so with --all")}
			case keep < 0:
				return usageError{Err: errors.New("--keep must not be negative")}
			}
			if dryRun {
				return a.read(cmd, func(r *sessions.Records) error {
					return prune(cmd, r, keep, true, asJSON)
				})
			}
			return a.change(cmd, func(_ string, st *badgerstore.Store) error {
				return prune(cmd, sessions.NewRecords(st), keep, false, asJSON)
			})
		},
	}
	cmd.Flags().IntVar(&keep, "keep", 0, "keep the newest `N` sessions (1 or more)")
	cmd.Flags().BoolVar(&all, "all", false, "delete every session")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would go, and delete nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per pruned session, one per line")
	return cmd
}

// prune finds what Prune(keep) deletes, deletes it (unless dryRun) and
// prints it.
func prune(cmd *cobra.Command, r *sessions.Records, keep int, dryRun, asJSON bool) error {
	// What goes is decided by the rows' keys, as Prune decides it; a row
	// whose value does not read is shown bare, by its key's id.
	plan, kept, err := r.PrunePlan(keep)
	if err != nil {
		return err
	}
	var gone []sessions.Session
	if len(plan) > 0 {
		rows, err := sessionRows(r)
		if err != nil {
			return err
		}
		for _, s := range rows {
			if _, in := slices.BinarySearch(plan, s.ID); in { // plan is in key order
				gone = append(gone, s)
			}
		}
		gone = withOrphans(gone, plan)
	}
	counts := map[sessions.SessionID]map[string]int{}
	records := 0
	if len(gone) > 0 {
		newest := plan[len(plan)-1]
		all, err := r.Counts()
		if err != nil {
			return err
		}
		var orphans []sessions.SessionID
		for id, c := range all {
			if id > newest {
				continue
			}
			counts[id] = c
			for _, n := range c {
				records += n
			}
			orphans = append(orphans, id)
		}
		gone = withOrphans(gone, orphans)
	}
	if !dryRun && len(gone) > 0 {
		if _, err := r.Prune(keep); err != nil {
			return fmt.Errorf("prune: %w (what was deleted stays deleted; running it again finishes the job)", err)
		}
	}

	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := api.NewEncoder(out)
		for _, s := range gone {
			if err := enc.Encode(api.NewSession(s, counts[s.ID])); err != nil {
				return err
			}
		}
		return out.Flush()
	}

	switch {
	case len(gone) == 0 && keep == 0:
		fmt.Fprintln(out, "nothing to prune: the store holds no sessions")
		return out.Flush()
	case len(gone) == 0:
		fmt.Fprintf(out, "nothing to prune: the store holds %s, and --keep is %d\n", render.Plural(kept, "session"), keep)
		return out.Flush()
	case dryRun:
		fmt.Fprintf(out, "would prune %s (%s), and keep %d:\n", render.Plural(len(gone), "session"), render.Plural(records, "record"), kept)
	default:
		fmt.Fprintf(out, "pruned %s (%s), and kept %d:\n", render.Plural(len(gone), "session"), render.Plural(records, "record"), kept)
	}
	if err := render.Pruned(out, gone, counts); err != nil {
		return err
	}
	if !dryRun {
		fmt.Fprintln(out, "Run records compact to give their disk space back.")
	}
	return out.Flush()
}
