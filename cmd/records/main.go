package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/version"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the store could not be read, or the output written
	exitUsage = 2 // the command line was wrong
)

// softMemoryLimit is the Go heap the command aims to stay within, unless
// GOMEMLIMIT says otherwise. The views hold a bounded amount, but read
// values of up to 16 MiB one after the other; by default Go lets its heap
// grow to twice what is live before it collects, so a run of huge values
// would double the peak (paceGC keeps the headroom small the rest of the
// time). Past the limit, Go collects sooner (and spends at most half the
// CPU doing so); a view that needs more still gets it. It is above what
// the tree of a session of a million records holds (60 MB), so that
// such a view is not collected over and over, three times as slow.
const softMemoryLimit = 96 << 20

func main() {
	if debug.SetMemoryLimit(-1) == math.MaxInt64 { // GOMEMLIMIT not set
		debug.SetMemoryLimit(softMemoryLimit)
	}
	paceGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args, writing output to stdout and errors to
// stderr, and returns the exit code. It is main without the process, so
// tests can drive the command as a user would.
func run(args []string, stdout, stderr io.Writer) int {
	// What the library and Badger log goes to stderr cleaned, as
	// everything else the command prints there (see stderrLog).
	prevLog, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(newStderrLog(stderr)))
	defer func() {
		slog.SetDefault(prevLog)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
	}()
	a := &app{}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	// An error may name a file of the store's directory, whose name is
	// anyone's: it is cleaned as every field printed is.
	fmt.Fprintf(stderr, "records: %s\n", cleanMessage(err.Error()))
	// Cobra reports a bad flag, argument or command before any command
	// starts; our own flag checks say so with usageError.
	if !a.started || errors.As(err, new(usageError)) {
		fmt.Fprintln(stderr, "Run 'records --help' for usage.")
		return exitUsage
	}
	return exitError
}

// app is the state the commands share: the persistent flags, and whether
// the command line was accepted.
type app struct {
	dir     string
	dirFlag string // the flag that gave dir, for messages: --dir unless said
	// dirs are the --dir flags as given: several, or a glob, read as one
	// store (stores.go), and dir is then "".
	dirs    []string
	command string // the command run, for messages

	wait    time.Duration
	started bool // a command got past argument parsing
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "records",
		Short: "Read what an environment remembers of how it was built",
		Long: `records reads an otelrecords store: the sessions that changed it, and the
records each session left, in the order they happened.

The store is opened read-only and never created (pull, which fills it,
creates it). It is --dir if given, else
$OTELRECORDS_DIR, else the per-user default (the user cache directory's
otelrecords/default). Text output strips control characters from every
field; --json prints one JSON object per line, described in docs/FORMAT.md.

--dir given more than once, or as a glob ('runners/*/records'), reads
several stores as one: stores copied from CI runners or several gateways,
their sessions told apart by id. A store among them that is damaged, busy
or missing is named in a warning, and the others are read. Commands that
change a store or follow one (prune, compact, doctor, watch, pull) take
one.`,
		Example: `  records sessions
  records dump --kind autotune
  records --dir ./build/records dump --session 1735787045006000000 --json`,
		Version:       version.Module(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.started, a.command = true, cmd.Name()
			if len(a.dirs) == 1 && !isGlob(a.dirs[0]) {
				a.dir = a.dirs[0]
			}
			if a.dir == "" && len(a.dirs) > 0 && slices.Contains(oneStore, a.command) {
				_, err := a.oneOf() // several stores: refused before anything is done
				return err
			}
			return nil
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{flagError(cmd, err)} })
	root.PersistentFlags().StringArrayVar(&a.dirs, "dir", nil,
		"the store `directory` (default $OTELRECORDS_DIR, else the user cache directory's otelrecords/default); repeated, or a glob, several stores read as one")
	root.PersistentFlags().DurationVar(&a.wait, "wait", 30*time.Second,
		"how long to wait for a store another process holds")
	root.AddCommand(a.sessionsCommand(), a.dumpCommand())
	root.AddCommand(a.summaryCommand(), a.timelineCommand(), a.showCommand(), a.diffCommand(),
		a.pruneCommand(), a.compactCommand(), a.exportCommand(), a.reportCommand())
	root.AddCommand(a.replayCommand(), a.pullCommand())
	root.AddCommand(a.doctorCommand())
	root.AddCommand(a.whyCommand(), a.costCommand(), a.watchCommand())
	return root
}

// oneStore are the commands that change a store (prune, compact, doctor,
// pull) or follow one (watch): --dir names one store for them, never
// several read as one.
var oneStore = []string{"prune", "compact", "doctor", "watch", "pull"}

// badFlagValue is how the flag parser words a value it could not take.
var badFlagValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([^"]+)" flag: (.*)$`)

// flagError rewords an error of the flag parser in the terms of the
// command line: --top "x": not a whole number, rather than
// strconv.ParseInt: parsing "x": invalid syntax.
func flagError(cmd *cobra.Command, err error) error {
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, name, why := m[1], m[2], m[3]
	if f := cmd.Flags().Lookup(name); f != nil {
		switch f.Value.Type() {
		case "int", "int64", "uint", "uint64":
			why = "not a whole number"
			if strings.Contains(m[3], "out of range") {
				why = "out of range"
			}
		case "float32", "float64":
			why = "not a number"
		case "duration":
			why = "not a duration (like 500ms, 30s or 2m)"
		case "bool":
			why = "not true or false"
		}
	}
	return fmt.Errorf("--%s %q: %s", name, value, why)
}

// usageError is an error in the command line rather than in the store.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// read opens the store read-only, hands a reader of it to fn, and closes
// it. A store that does not exist is reported as such and not created; a
// store another process holds is reported as busy. Reading writes
// nothing where the store cannot be written (it still merges a spool, and
// replays a crashed writer's log, where it can). After fn, values the
// reader skipped because they did not decode are counted on stderr.
func (a *app) read(cmd *cobra.Command, fn func(*sessions.Records) error) (err error) {
	if a.dir == "" && len(a.dirs) > 0 {
		return a.readMany(cmd, fn) // several stores, or a glob
	}
	dir, err := a.storeDir()
	if err != nil {
		return err
	}
	// Another process may hold the store: a writer lets it go when asked
	// (see internal/write/sharedstore), so wait a bounded time, and say so.
	ctx, cancel := context.WithTimeout(cmd.Context(), a.wait)
	defer cancel()
	st, err := openReader(ctx, cmd.ErrOrStderr(), dir)
	if err != nil {
		return openError(dir, err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close the store at %s: %w", dir, cerr)
		}
	}()
	reportUnmerged(cmd.ErrOrStderr(), "", st.Unmerged())
	return readRecords(cmd, st, fn)
}

// storeDir returns the store directory: --dir, else the default. A path
// that names a file, or lies under one, is refused with a message that
// says so, rather than the error of a file the store would hold.
func (a *app) storeDir() (string, error) {
	dir := a.dir
	if dir == "" && len(a.dirs) > 0 {
		return a.oneOf()
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
				if a.dir != "" {
					what = cmp.Or(a.dirFlag, "--dir") + " " + dir
				}
				if p == dir {
					return "", fmt.Errorf("%s is a file, not a store's directory", clean(what))
				}
				return "", fmt.Errorf("%s lies under %s, which is a file, not a directory", clean(what), clean(p))
			}
			return dir, nil
		}
		if filepath.Dir(p) == p {
			return dir, nil
		}
	}
}

// openError says why the store in dir could not be opened, in the terms
// of someone at the command line.
func openError(dir string, err error) error {
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

// change opens the store read-write for a command that changes it (prune,
// compact), hands it to fn, and closes it. Unlike a program recording, it
// never creates a store: a directory holding none is reported as missing.
// It needs the store to itself: it waits, as read does, for another
// process to let the store go, and reports it busy after --wait.
func (a *app) change(cmd *cobra.Command, fn func(dir string, st *badgerstore.Store) error) (err error) {
	return a.write(cmd, false, fn)
}

// write is change, and with create a store is created where there is
// none (records pull fills one).
func (a *app) write(cmd *cobra.Command, create bool, fn func(dir string, st *badgerstore.Store) error) (err error) {
	dir, err := a.storeDir()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.wait)
	defer cancel()
	said := false
	onWait := func(error) {
		if !said {
			said = true
			fmt.Fprintf(cmd.ErrOrStderr(), "records: waiting for the store at %s: another process holds it\n", cleanMessage(dir))
		}
	}
	if !create {
		// A read-only open checks that a store is there, and creates
		// nothing (it also recovers a store whose writer crashed).
		ro, err := badgerstore.OpenWait(ctx, dir, onWait, badgerstore.WithReadOnly())
		if err != nil {
			return openError(dir, err)
		}
		if err := ro.Close(); err != nil {
			return fmt.Errorf("close the store at %s: %w", dir, err)
		}
	}
	st, err := badgerstore.OpenWait(ctx, dir, onWait)
	if errors.Is(err, badgerstore.ErrLocked) {
		return fmt.Errorf("the store at %s is busy: another process holds it open; try again when it is done", dir)
	} else if err != nil {
		return openError(dir, err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close the store at %s: %w", dir, cerr)
		}
	}()
	return fn(dir, st)
}
