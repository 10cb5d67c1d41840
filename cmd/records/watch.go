package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
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
					return usageError{fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
			if a.dir != "" {
				// A directory that is not there is a mistake, not a store
				// yet to come: nothing creates a store's parent.
				if _, err := os.Stat(a.dir); errors.Is(err, fs.ErrNotExist) {
					return usageError{fmt.Errorf("--dir %s: no such directory", clean(a.dir))}
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
	dir, err := a.storeDir()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	enc := jsonLines(out)
	var cols watchColumns
	emit := func(kr kindRecord) error {
		if asJSON {
			return enc.Encode(toJSON(kr))
		}
		_, err := io.WriteString(out, cols.line(kr))
		return err
	}
	stderr := cmd.ErrOrStderr()
	w := &watcher{kinds: kinds, seen: map[sessions.SessionID]*followed{}, known: map[sessions.SessionID]bool{},
		pruned: func(id sessions.SessionID, printed int) {
			out.Flush() // what was printed before the prune, first
			fmt.Fprintf(stderr, "records: session %s was pruned from the store while watched (%d of its records read before)\n", id, printed)
		}}
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	first, said, putOff := true, false, false
	for {
		err := w.read(ctx, dir, first, emit)
		if first && putOff && err == nil {
			fmt.Fprintf(stderr, "records: watching the store at %s\n", clean(dir))
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
				fmt.Fprintf(stderr, "records: waiting for a store at %s\n", clean(dir))
			}
		case errors.Is(err, badgerstore.ErrLocked) && first:
			// A process that holds the store and does not let go, or a
			// writer slow to let go on a loaded machine: read at the next
			// tick. Until a read gets in, nothing is known of the store,
			// so the next read is still the first: watch begins there.
			if !putOff {
				putOff = true
				fmt.Fprintf(stderr, "records: the store at %s is busy: another process holds it open; watching begins once it is let go\n", clean(dir))
			}
		case err != nil && first:
			return openError(dir, err)
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

// watchColumns lays watch's text lines out in columns. Lines are printed
// as records arrive, so no column can be as wide as its widest cell to
// come: each is as wide as the widest seen so far (at least its heading's
// width), and widens when a wider cell comes. The session id has a
// fixed width (a uint64 is at most 20 digits).
type watchColumns struct {
	seq, offset, kind, name, wall int
}

// watchNameMax is the widest a name pads the name column to: a longer
// name overflows its line rather than push every later line right.
const watchNameMax = 48

func (c *watchColumns) line(kr kindRecord) string {
	session := kr.Stamp.Session.String()
	seq := strconv.FormatUint(kr.Stamp.Seq, 10)
	offset := formatDuration(kr.Stamp.Offset)
	kind := clean(kr.Kind)
	name := clean(orDash(kr.Record.Name))
	wall := formatDuration(kr.Record.Wall)
	c.seq = max(c.seq, 5, len(seq))
	c.offset = max(c.offset, 8, utf8.RuneCountInString(offset))
	c.kind = max(c.kind, 8, utf8.RuneCountInString(kind))
	c.name = min(max(c.name, 16, utf8.RuneCountInString(name)), watchNameMax)
	c.wall = max(c.wall, 8, utf8.RuneCountInString(wall))
	var b strings.Builder
	b.WriteString(pad(session, 20, false))
	b.WriteString("  " + pad(seq, c.seq, true))
	b.WriteString("  " + pad(offset, c.offset, true))
	b.WriteString("  " + pad(kind, c.kind, false))
	b.WriteString("  " + pad(name, c.name, false))
	b.WriteString("  " + pad(wall, c.wall, true))
	if len(kr.Record.Attributes) > 0 {
		b.WriteString("  " + formatAttrs(kr.Record.Attributes))
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}

// pad pads s with spaces to width characters, on the left when right
// (numbers and durations line up on their last digit).
func pad(s string, width int, right bool) string {
	n := width - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

// watcher remembers what watch has printed of the sessions it follows.
type watcher struct {
	kinds []string // nil: every kind
	// known holds every session seen in the store, followed or not: the
	// sessions there at the first read that watch does not follow, and
	// the followed ones, so a session is followed from its first record
	// only when it appears after the first read, whatever its id.
	known map[sessions.SessionID]bool
	seen  map[sessions.SessionID]*followed
	// pruned is told of a followed session whose row went, and how many
	// of its records watch had read (printed, or there when it started).
	pruned func(id sessions.SessionID, printed int)
}

// followed is a session watch follows: the seqs it printed (or found
// when it started), when it last wrote something, and whether its row
// was there at the last read.
type followed struct {
	seqs   map[uint64]bool
	active time.Time
	hadRow bool
}

// read opens the store read-only, emits the records of the followed
// sessions not emitted before, in stamp order, and closes the store. The
// first read emits nothing: it notes what is there.
func (w *watcher) read(ctx context.Context, dir string, first bool, emit func(kindRecord) error) error {
	octx, cancel := context.WithTimeout(ctx, watchOpenWait)
	defer cancel()
	st, err := badgerstore.OpenWait(octx, dir, nil, badgerstore.WithReadOnly())
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, badgerstore.ErrLocked):
		return err // no store yet, or busy: the caller tries again
	case err != nil && first:
		return err
	case err != nil:
		return nil // try again at the next tick
	}
	defer st.Close() // a read-only store has nothing to lose on close
	r := sessions.NewRecords(st)
	rows, err := sessionRows(r)
	if err != nil {
		return err
	}
	now := time.Now()
	hasRow := make(map[sessions.SessionID]bool, len(rows))
	for i, s := range rows {
		hasRow[s.ID] = true
		switch {
		case w.known[s.ID]:
		case first && i < len(rows)-1:
			w.known[s.ID] = true // there before watch: not followed
		default:
			// The newest at the first read, or any session that appeared
			// since.
			w.known[s.ID] = true
			w.seen[s.ID] = &followed{seqs: map[uint64]bool{}, active: now}
		}
	}
	if len(w.seen) == 0 {
		return nil
	}
	kinds := w.kinds
	if kinds == nil {
		if kinds, err = r.Kinds(); err != nil {
			return err
		}
	}
	ids := slices.Sorted(maps.Keys(w.seen))
	for _, id := range ids {
		f := w.seen[id]
		for kr, err := range r.InStampOrder(kinds, sessions.InSession(id)) {
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
		if f.hadRow && !hasRow[id] {
			w.pruned(id, len(f.seqs))
		}
		f.hadRow = hasRow[id]
	}
	// Stop following sessions other than the newest that have gone quiet
	// (or were pruned, and nothing has written under them since).
	newest := ids[len(ids)-1]
	for _, id := range ids {
		if id != newest && now.Sub(w.seen[id].active) > watchIdle {
			delete(w.seen, id)
		}
	}
	return nil
}
