// Package stores is how the records command finds and opens the stores
// --dir names: one store or several (--dir repeated, or a glob: stores
// copied from CI runners, or from several gateways, read as one through
// sessions.Union), read-only for a command that reads and read-write for
// one that changes a store, waiting a bounded time for another process
// that holds one and saying so, and naming in the terms of the command
// line what could not be opened. Reading never creates a store.
package stores

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
	"github.com/otelrecords/otelrecords/sessions"
)

// Dirs are the stores a command works on, as the command line names them.
type Dirs struct {
	// Dir is the one store named, or "" when Given names several, or a
	// glob, or none (then the default store).
	Dir string
	// Given are the --dir flags as given.
	Given []string
	// Flag is the flag that gave Dir, for messages: --dir when "".
	Flag string
	// Command is the command run, for messages.
	Command string
	// Wait is how long to wait for a store another process holds.
	Wait time.Duration
}

// A UsageError is a mistake in the command line (--dir) rather than in a
// store: the command exits with 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Read opens the store read-only (or the stores, as one), hands a reader
// of it to fn, and closes it. A store that does not exist is reported as such and not created; a
// store another process holds is reported as busy. Reading writes
// nothing where the store cannot be written (it still merges a spool, and
// replays a crashed writer's log, where it can). After fn, values the
// reader skipped because they did not decode are counted on stderr.
func (d *Dirs) Read(ctx context.Context, stderr io.Writer, fn func(*sessions.Records) error) (err error) {
	if d.Dir == "" && len(d.Given) > 0 {
		return d.readMany(ctx, stderr, fn) // several stores, or a glob
	}
	dir, err := d.One()
	if err != nil {
		return err
	}
	// Another process may hold the store: a writer lets it go when asked
	// (see internal/write/sharedstore), so wait a bounded time, and say so.
	ctx, cancel := context.WithTimeout(ctx, d.Wait)
	defer cancel()
	st, err := openReader(ctx, stderr, dir)
	if err != nil {
		return OpenError(dir, err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close the store at %s: %w", dir, cerr)
		}
	}()
	reportUnmerged(stderr, "", st.Unmerged())
	return readRecords(stderr, dir, st, fn)
}

// One returns the store directory: --dir, else the default. A path
// that names a file, or lies under one, is refused with a message that
// says so, rather than the error of a file the store would hold.
func (d *Dirs) One() (string, error) {
	dir := d.Dir
	if dir == "" && len(d.Given) > 0 {
		return d.oneOf()
	}
	if dir == "" {
		var err error
		if dir, err = badgerstore.DefaultDir(); err != nil {
			return "", fmt.Errorf("give the store directory with --dir: %w", err)
		}
	}
	for p := dir; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil {
			if !fi.IsDir() {
				what := "the store directory " + dir
				if d.Dir != "" {
					what = cmp.Or(d.Flag, "--dir") + " " + dir
				}
				if p == dir {
					return "", fmt.Errorf("%s is a file, not a store's directory", render.Clean(what))
				}
				return "", fmt.Errorf("%s lies under %s, which is a file, not a directory", render.Clean(what), render.Clean(p))
			}
			return dir, nil
		}
		if filepath.Dir(p) == p {
			return dir, nil
		}
	}
}

// OpenError says why the store in dir could not be opened, in the terms
// of someone at the command line.
func OpenError(dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no store at %s (nothing has been recorded there yet)", dir)
	case errors.Is(err, badgerstore.ErrLocked):
		return fmt.Errorf("the store at %s is busy: another process holds it open for writing; try again when it is done", dir)
	case errors.Is(err, badgerstore.ErrNeedsRecovery):
		return fmt.Errorf("the store at %s was not closed cleanly (its writer crashed or was killed); "+
			"nothing is lost, and it can be read again once a program has opened it to record", dir)
	}
	return err // it names the directory
}

// Write opens the store read-write for a command that changes it (prune,
// compact, pull), hands it to fn, and closes it. Unless create (records
// pull fills a store), it never creates a store, as a program recording
// would: a directory holding none is reported as missing. It needs the
// store to itself: it waits, as Read does, for another process to let the
// store go, and reports it busy after Wait.
func (d *Dirs) Write(ctx context.Context, stderr io.Writer, create bool, fn func(dir string, st *badgerstore.Store) error) (err error) {
	dir, err := d.One()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.Wait)
	defer cancel()
	said := false
	onWait := func(error) {
		if !said {
			said = true
			fmt.Fprintf(stderr, "records: waiting for the store at %s: another process holds it\n", render.CleanMessage(dir))
		}
	}
	if !create {
		// A read-only open checks that a store is there, and creates
		// nothing (it also recovers a store whose writer crashed).
		ro, err := badgerstore.OpenWait(ctx, dir, onWait, badgerstore.WithReadOnly())
		if err != nil {
			return OpenError(dir, err)
		}
		path := ro.Path()
		if err := ro.Close(); err != nil {
			return fmt.Errorf("close the store at %s: %w", dir, err)
		}
		// Else Badger would say it cannot write its pid file.
		if !storedir.Writable(path) {
			return fmt.Errorf("the store at %s cannot be written (read-only media, or no permission to write it): nothing was changed", dir)
		}
	}
	st, err := badgerstore.OpenWait(ctx, dir, onWait)
	if errors.Is(err, badgerstore.ErrLocked) {
		return fmt.Errorf("the store at %s is busy: another process holds it open; try again when it is done", dir)
	} else if err != nil {
		return OpenError(dir, err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close the store at %s: %w", dir, cerr)
		}
	}()
	return fn(dir, st)
}

// IsGlob reports whether a --dir holds a pattern filepath.Glob expands.
func IsGlob(dir string) bool { return strings.ContainsAny(dir, "*?[") }

// List returns the directories of the stores a read reads, each once, in
// the order --dir gives them: a glob expanded (dirs), else the one store
// (One).
func (d *Dirs) List() ([]string, error) {
	if d.Dir == "" && len(d.Given) > 0 {
		return d.dirs()
	}
	dir, err := d.One()
	if err != nil {
		return nil, err
	}
	return []string{dir}, nil
}

// dirs returns the directories --dir names, each once, in the order
// given: a glob expands to the directories it matches, sorted. A glob
// that matches no directory is a mistake in the command line; a directory
// named outright that holds no store is left for the opener to say so.
func (d *Dirs) dirs() ([]string, error) {
	var dirs []string
	for _, d := range d.Given {
		if !IsGlob(d) {
			dirs = append(dirs, d)
			continue
		}
		if _, err := os.Stat(d); err == nil {
			dirs = append(dirs, d) // a directory whose name holds a '*'
			continue
		}
		matches, err := filepath.Glob(d)
		if err != nil {
			return nil, UsageError{fmt.Errorf("--dir %q: %w", d, err)}
		}
		n := 0
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() {
				dirs = append(dirs, m)
				n++
			}
		}
		if n == 0 {
			return nil, UsageError{fmt.Errorf("--dir %q matches no directory", d)}
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
func (d *Dirs) oneOf() (string, error) {
	dirs, err := d.dirs()
	if err != nil {
		return "", err
	}
	if len(dirs) != 1 {
		return "", UsageError{fmt.Errorf("records %s works on one store, and --dir names %d (%s): give one",
			d.Command, len(dirs), render.Clean(strings.Join(dirs, ", ")))}
	}
	return dirs[0], nil
}

// openReader opens the store in dir read-only, waiting (until ctx ends)
// for a writer that holds it to let it go, and saying so on stderr;
// warnings (a spool file set aside, Badger's) go there too.
func openReader(ctx context.Context, stderr io.Writer, dir string) (*badgerstore.Store, error) {
	return badgerstore.OpenWait(ctx, dir, func(error) {
		fmt.Fprintf(stderr, "records: waiting for the store at %s: another process holds it\n", render.CleanMessage(dir))
	}, badgerstore.WithReadOnly(), badgerstore.WithErrorHandler(func(err error) {
		// A spool file set aside or skipped, a warning of Badger's: the
		// reader goes on, and says so where its errors go.
		fmt.Fprintf(stderr, "records: warning: %s\n", render.CleanMessage(err.Error()))
	}))
}

// reportUnmerged says on stderr how many records a read-only store shows
// from its spool, which stays for a writer to merge: a store this process
// cannot write (read-only media, another user's) is read as it is. where
// names the store when several are read.
func reportUnmerged(stderr io.Writer, where string, n int) {
	if where != "" {
		where = " of the store at " + render.CleanMessage(where)
	}
	switch {
	case n == 1:
		fmt.Fprintf(stderr, "records: 1 record in the spool%s left for a writer to merge\n", where)
	case n > 1:
		fmt.Fprintf(stderr, "records: %d records in the spool%s left for a writer to merge\n", n, where)
	}
}

// readRecords hands a reader of st, the store in dir ("" for several
// read as one), to fn, and then counts on stderr the values the reader
// skipped because they did not decode (reportSkipped).
func readRecords(stderr io.Writer, dir string, st sessions.Store, fn func(*sessions.Records) error) error {
	r := sessions.NewRecords(st)
	defer func() { reportSkipped(stderr, dir, r.Skipped()) }()
	return fn(r)
}

// reportSkipped counts on stderr n values a read of the store in dir ("",
// several stores) skipped because they did not decode, and names the next
// step: a damaged block of a store's file is one cause, and records doctor
// --check reads every block of every file and says which is damaged.
func reportSkipped(stderr io.Writer, dir string, n int64) {
	if n <= 0 {
		return
	}
	were := "were"
	if n == 1 {
		were = "was"
	}
	check := "records doctor --check --dir on each store to check its files"
	if dir != "" {
		check = "records doctor --check --dir " + render.Clean(dir) + " to check the store's files"
	}
	fmt.Fprintf(stderr, "records: %s did not decode and %s skipped; run %s for damage\n",
		render.Plural(int(n), "value"), were, check)
}

// readMany is read for several stores: it opens them all at once (each
// waiting --wait for a writer holding it), names on stderr each one it
// could not open (missing, busy, damaged, not closed cleanly) and reads
// the others as one (sessions.Union). A store that fails while it is
// read is named too, and left out of the rest of the read. It fails only
// when no store could be opened.
func (d *Dirs) readMany(ctx context.Context, w io.Writer, fn func(*sessions.Records) error) (err error) {
	dirs, err := d.dirs()
	if err != nil {
		return err
	}
	stderr := &lockedWriter{w: w}
	ctx, cancel := context.WithTimeout(ctx, d.Wait)
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
			fmt.Fprintf(stderr, "records: warning: left out: %s\n", render.CleanMessage(OpenError(dir, failed[i]).Error()))
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
			render.CleanMessage(names[i]), render.CleanMessage(err.Error()))
	})
	one := "" // the store the skipped values are in, where only one is read
	if len(names) == 1 {
		one = names[0]
	}
	return readRecords(w, one, u, fn)
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

// Name names the store (or stores) a read reads, for output that says
// which: its directory, or the directories --dir names, joined.
func (d *Dirs) Name() string {
	if d.Dir == "" && len(d.Given) > 0 {
		if dirs, err := d.dirs(); err == nil {
			return strings.Join(dirs, " + ")
		}
	}
	dir, _ := d.One()
	return dir
}
