package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Watching a store.
const (
	// watchEvery is how often watch reads the store: a record shows
	// within about a second of being written.
	watchEvery = 500 * time.Millisecond
)

func (a *app) watchCommand() *cobra.Command {
	var (
		asJSON bool
		kind   string
	)
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Print records as a program writes them, until interrupted",
		Long: `Follow the store while programs write it: print each record within about a
second of it being written, in stamp order, until interrupted (Ctrl-C,
which exits with status 0).

watch follows the session in progress when it starts (the newest) and
every session that appears after it, whenever it started (a program keeps
its session when it first changes something, perhaps after a newer one
did); records already in the store when it starts are not printed
(records dump prints them). Every record of a followed session is printed
once. A session pruned while followed (records prune, a writer's keep
count) is announced on standard error; records written under it after
the prune are still printed. A session other than the newest that has
written nothing for a minute is no longer followed. A store not there
yet is waited for; a --dir that does not exist is an error.
Records come out in stamp order as they are read, twice a second: a
record written late (a mark ends after what it holds) comes out when it
is written, after records stamped later.

watch holds no writer up: each read opens the store read-only, asks a
writer that holds it to let go, reads what is new and lets go at once; a
writer recording beside it goes on within milliseconds. When a writer
does not let go in time, that read is skipped. When that is the first
read (a process that holds the store and does not let go, as records
prune does while it works), watch says so and begins when it gets in: what
was written before then is not printed.

Each text line is as records dump prints it: session, seq, offset, kind,
name, wall time and attributes, in columns that widen as wider values
come and then stay aligned. With --json, one JSON object per record
and line, as records dump --json prints it.`,
		Example: `  records watch
  records watch --kind autotune
  records watch --json | jq -c 'select(.wall_ns > 1e9)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var kinds []string
			if kind != "" {
				k, err := keys.CheckKind(kind)
				if err != nil {
					return usageError{Err: fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
			if a.Dir != "" {
				// A --dir that is not there is refused rather than waited
				// for, though a writer would create it and its parents: a
				// mistyped path would be watched for ever with nothing
				// said (issue 22). A store yet to come is waited for in a
				// --dir that exists, and at $OTELRECORDS_DIR or the default.
				if _, err := os.Stat(a.Dir); errors.Is(err, fs.ErrNotExist) {
					return usageError{Err: fmt.Errorf("--dir %s: no such directory", render.Clean(a.Dir))}
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return a.watch(ctx, cmd, kinds, asJSON)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "print only records of this `kind`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	return cmd
}

// watch reads the store every watchEvery until ctx ends, printing what is
// new. A store not there yet is waited for; once found, a read that
// cannot open it (a writer holding on, say) is skipped.
func (a *app) watch(ctx context.Context, cmd *cobra.Command, kinds []string, asJSON bool) error {
	dir, err := a.One()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	enc := api.NewEncoder(out)
	var cols render.Columns
	emit := func(kr sessions.KindRecord) error {
		if asJSON {
			return enc.Encode(api.NewRecord(kr))
		}
		_, err := io.WriteString(out, cols.Line(kr))
		return err
	}
	stderr := cmd.ErrOrStderr()
	w := stores.NewFollower(kinds, func(id sessions.SessionID, printed int) {
		out.Flush() // what was printed before the prune, first
		fmt.Fprintf(stderr, "records: session %s was pruned from the store while watched (%d of its records read before)\n", id, printed)
	})
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	first, said, putOff := true, false, false
	for {
		err := w.Read(ctx, dir, first, emit)
		if first && putOff && err == nil {
			fmt.Fprintf(stderr, "records: watching the store at %s\n", render.Clean(dir))
		}
		if ferr := out.Flush(); ferr != nil {
			return ferr
		}
		switch {
		case ctx.Err() != nil:
			return nil // interrupted: the way watch ends
		case errors.Is(err, fs.ErrNotExist):
			// No store yet: everything a program writes from now on is
			// new.
			if !said {
				said = true
				fmt.Fprintf(stderr, "records: waiting for a store at %s\n", render.Clean(dir))
			}
		case errors.Is(err, badgerstore.ErrLocked) && first:
			// A process that holds the store and does not let go, or a
			// writer slow to let go on a loaded machine: read at the next
			// tick. Until a read gets in, nothing is known of the store,
			// so the next read is still the first: watch begins there.
			if !putOff {
				putOff = true
				fmt.Fprintf(stderr, "records: the store at %s is busy: another process holds it open; watching begins once it is let go\n", render.Clean(dir))
			}
		case err != nil && first:
			return stores.OpenError(dir, err)
		}
		if !errors.Is(err, badgerstore.ErrLocked) {
			first = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
