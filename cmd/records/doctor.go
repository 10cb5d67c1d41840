package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/badgerstore/doctor"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
)

func (a *app) doctorCommand() *cobra.Command {
	var checkOnly bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a store, and recover what is readable from a damaged one",
		Long: `Check every file of the store, every block of every table included, and if
a file is damaged, recover: copy every record and session row that can
still be read into a new store, built beside the damaged one; then move the
damaged store aside, to <dir>.damaged-<UTC time>, where it is kept as it
was, and the new store to <dir>; and say what was kept and what was lost.
A healthy store is left alone.

A program recording into a damaged store, and every other records command,
fail with an error naming the damaged file rather than read a store that
may crash them or lose more data; this is the command that error points
to. The new store gets a copy of the records a busy store set aside (its
spool).

The doctor can be stopped at any moment: before the swap, <dir> is the
damaged store; during it, a journal (<dir>.doctor) says where the records
are, and every records command points to it; run the doctor again to
finish. The doctor needs the store to itself: it changes nothing while
another process has the store open. A store reached through a symbolic
link is recovered where the link points, and the link kept. --check only
checks, and exits with 1 if a file is damaged.

The doctor also names a store an earlier otelrecords put in the otelrecords/
child of a directory holding other files, and says how to move it (it is
read and written where it is); and a second store in a store's otelrecords/
child, which no reader of the store reads: an earlier otelrecords put one
there when two writers created the store at once.`,
		Example: `  records doctor
  records doctor --dir ./build/records --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.One()
			if err != nil {
				return err
			}
			dir, legacy := doctorDir(dir)
			defer noteSecondStore(cmd.OutOrStdout(), dir)
			if legacy {
				defer noteLegacyStore(cmd.OutOrStdout(), dir)
			}
			if checkOnly {
				return doctorCheck(cmd.OutOrStdout(), dir)
			}
			return doctorRecover(cmd.OutOrStdout(), dir)
		},
	}
	cmd.Flags().BoolVar(&checkOnly, "check", false, "only check; exit with 1 if a file is damaged")
	return cmd
}

// doctorDir returns the directory the doctor works on for --dir dir: dir,
// or, where dir holds no store and an earlier otelrecords put one in its
// child badgerstore.LegacyChild (dir is a directory of other files), that
// child, as every reader and writer finds it (legacy): so that what the
// doctor says names the directory it checked (issue 33: it named dir).
func doctorDir(dir string) (_ string, legacy bool) {
	child := filepath.Join(badgerstore.ExpandHome(dir), badgerstore.LegacyChild)
	if !badgerstore.Exists(dir) && badgerstore.Exists(child) {
		return child, true
	}
	return dir, false
}

// noteLegacyStore says where the store in dir, the LegacyChild of a
// directory of other files, is, and how to give it a directory of its
// own: programs given the parent go on using it there, but the one rule
// (docs/FORMAT.md, "Where a store lives") names the store itself.
func noteLegacyStore(w io.Writer, dir string) {
	parent := filepath.Dir(dir)
	to := filepath.Join(parent, "records")
	if _, err := os.Lstat(to); err == nil {
		to = filepath.Join(parent, "records-store")
	}
	fmt.Fprintf(w, "\nNote: the store is in %s, inside %s, which holds other files: an earlier otelrecords put it there. Programs given %s go on reading and writing it there. To give it a directory of its own, name %s itself from now on (--dir, OTELRECORDS_DIR, exporter.New, the Collector's directory); or, with no program writing it, move it and name where it went:\n  mv %s %s\n",
		render.Clean(dir), render.Clean(parent), render.Clean(parent), render.Clean(dir), render.Clean(dir), render.Clean(to))
}

// noteSecondStore says so when the store in dir has a second store in its
// child badgerstore.LegacyChild, which no reader of dir reads: one a writer
// put there, before the one rule, when it raced another writer for a new
// directory (docs/FORMAT.md, "Where a store lives"), with the records of
// its session, or of its first writes.
func noteSecondStore(w io.Writer, dir string) {
	noteStrandedSpool(w, dir)
	child := filepath.Join(dir, badgerstore.LegacyChild)
	for _, d := range []string{dir, child} {
		if _, err := os.Lstat(filepath.Join(d, "MANIFEST")); err != nil {
			return
		}
	}
	fmt.Fprintf(w, "\nNote: %s holds a second store, which readers of %s do not read. An earlier otelrecords put it there when two writers created the store at once. Read the two as one with\n  records --dir %s --dir %s sessions\n",
		render.Clean(child), render.Clean(dir), render.Clean(dir), render.Clean(child))
}

// noteStrandedSpool says so when the store in dir is its parent's
// LegacyChild and the parent holds a spool: records an earlier otelrecords
// set aside in the directory it was given rather than where the store is,
// which no opener merges; moved into the store, the next open merges them.
func noteStrandedSpool(w io.Writer, dir string) {
	if filepath.Base(dir) != badgerstore.LegacyChild {
		return
	}
	stranded := filepath.Join(filepath.Dir(dir), "spool")
	if fi, err := os.Lstat(stranded); err != nil || !fi.IsDir() {
		return
	}
	if _, err := os.Lstat(filepath.Join(dir, "MANIFEST")); err != nil {
		return
	}
	into := filepath.Join(dir, "spool")
	how := fmt.Sprintf("mv %s %s", render.Clean(stranded), render.Clean(into))
	if _, err := os.Lstat(into); err == nil {
		how = fmt.Sprintf("mv %s/* %s/", render.Clean(stranded), render.Clean(into))
	}
	fmt.Fprintf(w, "\nNote: %s may hold records set aside for this store by an earlier otelrecords, outside it, where no program reads them. Move them into the store, and the next program to open it writes them in:\n  %s\n", render.Clean(stranded), how)
}

// doctorError says why the doctor could not work on the store in dir.
func doctorError(dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no store at %s", dir)
	case errors.Is(err, badgerstore.ErrLocked):
		return fmt.Errorf("the store at %s is busy: another process has it open; stop it, then run the doctor again", dir)
	}
	return err
}

// doctorCheck checks the store in dir and prints what is damaged.
func doctorCheck(w io.Writer, dir string) error {
	damage, err := doctor.Verify(dir)
	if err != nil {
		return doctorError(dir, err)
	}
	render.Checked(w, dir, damage)
	if len(damage) > 0 {
		return fmt.Errorf("the store at %s is damaged; run records doctor --dir %s to recover what is readable", dir, dir)
	}
	return nil
}

// doctorRecover recovers the store in dir, and prints what it did.
func doctorRecover(w io.Writer, dir string) error {
	rec, err := doctor.Recover(dir)
	if err != nil {
		if rec != nil && rec.Aside != "" {
			fmt.Fprintf(w, "The damaged store is safe at %s.\n", render.Clean(rec.Aside))
		}
		return doctorError(dir, err)
	}
	render.Recovered(w, dir, rec)
	return nil
}
