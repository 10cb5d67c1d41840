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
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Watching a store.
const (
	// watchEvery is how often watch reads the store: a record shows
	// within about a second of being written.
	watchEvery = 500 * time.Millisecond
	// watchOpenWait bounds how long one read waits for a writer to let
	// the store go. A writer yields at once when asked (see
	// internal/write/sharedstore); one that does not is left alone until the
	// next read, rather than waited for.
	watchOpenWait = 2 * time.Second
	// watchIdle is how long a session that writes nothing stays followed
	// once a newer one has started.
	watchIdle = time.Minute
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
every session that starts after it; records already in the store when it
starts are not printed (records dump prints them). A store that is not
there yet is waited for. A session older than
the newest that has written nothing for a minute is no longer followed.
Records come out in stamp order as they are read, twice a second: a
record written late (a mark ends after what it holds) comes out when it
is written, after records stamped later.

watch holds no writer up: each read opens the store read-only, asks a
writer that holds it to let go, reads what is new and lets go at once; a
writer recording beside it goes on within milliseconds. When a writer
does not let go in time, that read is skipped.

Each text line is as records dump prints it: session, seq, offset, kind,
name, wall time and attributes. With --json, one JSON object per record
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
					return usageError{fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
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
	dir, err := a.storeDir()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	enc := jsonLines(out)
	emit := func(kr kindRecord) error {
		if asJSON {
			return enc.Encode(toJSON(kr))
		}
		_, err := io.WriteString(out, watchLine(kr))
		return err
	}
	w := &watcher{kinds: kinds, seen: map[sessions.SessionID]*followed{}}
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	first, said := true, false
	for {
		err := w.read(ctx, dir, first, emit)
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
				fmt.Fprintf(cmd.ErrOrStderr(), "records: waiting for a store at %s\n", clean(dir))
			}
		case err != nil && first:
			return openError(dir, err)
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watchLine formats a record as records dump prints it, on one line.
func watchLine(kr kindRecord) string {
	line := kr.Stamp.Session.String() + "  " + strconv.FormatUint(kr.Stamp.Seq, 10) + "  " +
		formatDuration(kr.Stamp.Offset) + "  " + clean(kr.Kind) + "  " + clean(orDash(kr.Record.Name)) + "  " +
		formatDuration(kr.Record.Wall)
	if len(kr.Record.Attributes) > 0 {
		line += "  " + formatAttrs(kr.Record.Attributes)
	}
	return line + "\n"
}

// watcher remembers what watch has printed of the sessions it follows.
type watcher struct {
	kinds []string // nil: every kind
	// floor is the oldest session followed: the newest when watch
	// started, then the oldest still writing.
	floor sessions.SessionID
	seen  map[sessions.SessionID]*followed
}

// followed is a session watch follows: the seqs it printed (or found
// when it started), and when it last wrote something.
type followed struct {
	seqs   map[uint64]bool
	active time.Time
}

// read opens the store read-only, emits the records of the followed
// sessions not emitted before, in stamp order, and closes the store. The
// first read emits nothing: it notes what is there.
func (w *watcher) read(ctx context.Context, dir string, first bool, emit func(kindRecord) error) error {
	octx, cancel := context.WithTimeout(ctx, watchOpenWait)
	defer cancel()
	st, err := badgerstore.OpenWait(octx, dir, nil, badgerstore.WithReadOnly())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return err
	case err != nil && first:
		return err
	case err != nil:
		return nil // busy: try again at the next tick
	}
	defer st.Close() // a read-only store has nothing to lose on close
	r := sessions.NewRecords(st)
	rows, err := sessionRows(r)
	if err != nil || len(rows) == 0 {
		return err
	}
	if first {
		w.floor = rows[len(rows)-1].ID
	}
	kinds := w.kinds
	if kinds == nil {
		if kinds, err = r.Kinds(); err != nil {
			return err
		}
	}
	now := time.Now()
	for _, s := range rows {
		if s.ID < w.floor {
			continue
		}
		f := w.seen[s.ID]
		if f == nil {
			f = &followed{seqs: map[uint64]bool{}, active: now}
			w.seen[s.ID] = f
		}
		for kr, err := range explain.InStampOrder(r, s.ID, kinds) {
			if err != nil {
				return err
			}
			if f.seqs[kr.Stamp.Seq] {
				continue
			}
			f.seqs[kr.Stamp.Seq] = true
			f.active = now
			if !first {
				if err := emit(kr); err != nil {
					return err
				}
			}
		}
	}
	// Stop following sessions older than the newest that have gone
	// quiet; the floor is the oldest one left.
	newest := rows[len(rows)-1].ID
	ids := make([]sessions.SessionID, 0, len(w.seen))
	for id := range w.seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if id != newest && now.Sub(w.seen[id].active) > watchIdle {
			delete(w.seen, id)
			continue
		}
		w.floor = id
		break
	}
	return nil
}
