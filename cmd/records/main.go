package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
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
	slog.SetDefault(slog.New(render.NewLog(stderr)))
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
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	// An error may name a file of the store's directory, whose name is
	// anyone's: it is cleaned as every field printed is.
	fmt.Fprintf(stderr, "records: %s\n", render.CleanMessage(err.Error()))
	// Cobra reports a bad flag, argument or command before any command
	// starts; our own flag checks say so with usageError. The hint names
	// the help of the command whose line was wrong (records why --help),
	// which is the root's for a command that is not there.
	if !a.started || errors.As(err, new(usageError)) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitError
}

// app is the state the commands share: the stores the persistent flags
// name, and whether the command line was accepted.
type app struct {
	stores.Dirs
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
			a.started, a.Command = true, cmd.Name()
			if len(a.Given) == 1 && !stores.IsGlob(a.Given[0]) {
				a.Dir = a.Given[0]
			}
			if a.Dir == "" && len(a.Given) > 0 && slices.Contains(oneStore, a.Command) {
				_, err := a.One() // several stores: refused before anything is done
				return err
			}
			return nil
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{Err: flagError(cmd, err)} })
	root.PersistentFlags().StringArrayVar(&a.Given, "dir", nil,
		"the store `directory` (default $OTELRECORDS_DIR, else the user cache directory's otelrecords/default); repeated, or a glob, several stores read as one")
	root.PersistentFlags().DurationVar(&a.Wait, "wait", 30*time.Second,
		"how long to wait for a store another process holds")
	root.AddCommand(a.sessionsCommand(), a.dumpCommand())
	root.AddCommand(a.summaryCommand(), a.timelineCommand(), a.showCommand(), a.diffCommand(),
		a.pruneCommand(), a.compactCommand(), a.exportCommand(), a.reportCommand())
	root.AddCommand(a.replayCommand(), a.pullCommand())
	root.AddCommand(a.doctorCommand())
	root.AddCommand(a.whyCommand(), a.costCommand(), a.watchCommand(), a.serveCommand())
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

// usageError is an error in the command line rather than in the store:
// the one type of it, which package stores returns too.
type usageError = stores.UsageError

// read opens the store (or stores) read-only and hands a reader of it to
// fn (stores.Dirs.Read).
func (a *app) read(cmd *cobra.Command, fn func(*sessions.Records) error) error {
	return a.Read(cmd.Context(), cmd.ErrOrStderr(), fn)
}

// change opens the store read-write for a command that changes it (prune,
// compact), never creating one, and hands it to fn (stores.Dirs.Write).
func (a *app) change(cmd *cobra.Command, fn func(dir string, st *badgerstore.Store) error) error {
	return a.Write(cmd.Context(), cmd.ErrOrStderr(), false, fn)
}
