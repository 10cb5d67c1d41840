package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// This file reads several stores as one (--dir repeated, or a glob):
// stores copied from CI runners, or from several gateways. The union is
// the library's (sessions.Union); what is here is opening the stores and
// saying which could not be read.

// isGlob reports whether a --dir holds a pattern filepath.Glob expands.
func isGlob(dir string) bool { return strings.ContainsAny(dir, "*?[") }

// storeDirs returns the directories --dir names, each once, in the order
// given: a glob expands to the directories it matches, sorted. A glob
// that matches no directory is a mistake in the command line; a directory
// named outright that holds no store is left for the opener to say so.
func (a *app) storeDirs() ([]string, error) {
	var dirs []string
	for _, d := range a.dirs {
		if !isGlob(d) {
			dirs = append(dirs, d)
			continue
		}
		if _, err := os.Stat(d); err == nil {
			dirs = append(dirs, d) // a directory whose name holds a '*'
			continue
		}
		matches, err := filepath.Glob(d)
		if err != nil {
			return nil, usageError{fmt.Errorf("--dir %q: %w", d, err)}
		}
		n := 0
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() {
				dirs = append(dirs, m)
				n++
			}
		}
		if n == 0 {
			return nil, usageError{fmt.Errorf("--dir %q matches no directory", d)}
		}
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(dirs, func(d string) bool {
		d = filepath.Clean(d)
		dup := seen[d]
		seen[d] = true
		return dup
	}), nil
}

// oneOf returns the one store --dir names, for a command that changes or
// follows one store; several are refused, saying so.
func (a *app) oneOf() (string, error) {
	dirs, err := a.storeDirs()
	if err != nil {
		return "", err
	}
	if len(dirs) != 1 {
		return "", usageError{fmt.Errorf("records %s works on one store, and --dir names %d (%s): give one",
			a.command, len(dirs), clean(strings.Join(dirs, ", ")))}
	}
	return dirs[0], nil
}

// openReader opens the store in dir read-only, waiting (until ctx ends)
// for a writer that holds it to let it go, and saying so on stderr;
// warnings (a spool file set aside, Badger's) go there too.
func openReader(ctx context.Context, stderr io.Writer, dir string) (*badgerstore.Store, error) {
	return badgerstore.OpenWait(ctx, dir, func(error) {
		fmt.Fprintf(stderr, "records: waiting for the store at %s: another process holds it\n", cleanMessage(dir))
	}, badgerstore.WithReadOnly(), badgerstore.WithErrorHandler(func(err error) {
		// A spool file set aside or skipped, a warning of Badger's: the
		// reader goes on, and says so where its errors go.
		fmt.Fprintf(stderr, "records: warning: %s\n", cleanMessage(err.Error()))
	}))
}

// reportUnmerged says on stderr how many records a read-only store shows
// from its spool, which stays for a writer to merge: a store this process
// cannot write (read-only media, another user's) is read as it is. where
// names the store when several are read.
func reportUnmerged(stderr io.Writer, where string, n int) {
	if where != "" {
		where = " of the store at " + cleanMessage(where)
	}
	switch {
	case n == 1:
		fmt.Fprintf(stderr, "records: 1 record in the spool%s left for a writer to merge\n", where)
	case n > 1:
		fmt.Fprintf(stderr, "records: %d records in the spool%s left for a writer to merge\n", n, where)
	}
}

// readRecords hands a reader of st to fn, and then counts on stderr the
// values the reader skipped because they did not decode.
func readRecords(cmd *cobra.Command, st sessions.Store, fn func(*sessions.Records) error) error {
	r := sessions.NewRecords(st)
	defer func() {
		switch n := r.Skipped(); {
		case n == 1:
			fmt.Fprintln(cmd.ErrOrStderr(), "records: 1 value did not decode and was skipped")
		case n > 1:
			fmt.Fprintf(cmd.ErrOrStderr(), "records: %d values did not decode and were skipped\n", n)
		}
	}()
	return fn(r)
}

// readMany is read for several stores: it opens them all at once (each
// waiting --wait for a writer holding it), names on stderr each one it
// could not open (missing, busy, damaged, not closed cleanly) and reads
// the others as one (sessions.Union). A store that fails while it is
// read is named too, and left out of the rest of the read. It fails only
// when no store could be opened.
func (a *app) readMany(cmd *cobra.Command, fn func(*sessions.Records) error) (err error) {
	dirs, err := a.storeDirs()
	if err != nil {
		return err
	}
	stderr := &lockedWriter{w: cmd.ErrOrStderr()}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.wait)
	defer cancel()
	opened := make([]*badgerstore.Store, len(dirs))
	failed := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() { opened[i], failed[i] = openReader(ctx, stderr, dir) })
	}
	wg.Wait()

	var (
		stores []sessions.Store
		names  []string
	)
	for i, dir := range dirs {
		if failed[i] != nil {
			// A damaged store's error says which file, and to run the
			// doctor on it.
			fmt.Fprintf(stderr, "records: warning: left out: %s\n", cleanMessage(openError(dir, failed[i]).Error()))
			continue
		}
		st := opened[i]
		defer func() {
			if cerr := st.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close the store at %s: %w", dir, cerr)
			}
		}()
		reportUnmerged(stderr, dir, st.Unmerged())
		stores, names = append(stores, st), append(names, dir)
	}
	if len(stores) == 0 {
		return fmt.Errorf("none of the %d stores --dir names could be read", len(dirs))
	}
	u := sessions.Union(stores, func(i int, err error) {
		fmt.Fprintf(stderr, "records: warning: the store at %s failed while read, and is left out of the rest: %s\n",
			cleanMessage(names[i]), cleanMessage(err.Error()))
	})
	return readRecords(cmd, u, fn)
}

// lockedWriter lets several goroutines write whole lines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// storeName names the store (or stores) a read reads, for output that
// says which: its directory, or the directories --dir names, joined.
func (a *app) storeName() string {
	if a.dir == "" && len(a.dirs) > 0 {
		if dirs, err := a.storeDirs(); err == nil {
			return strings.Join(dirs, " + ")
		}
	}
	dir, _ := a.storeDir()
	return dir
}
