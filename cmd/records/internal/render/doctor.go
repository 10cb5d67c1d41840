package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/badgerstore/doctor"
)

// Checked writes what records doctor --check found of the store in dir:
// that it is healthy, or its damaged files.
func Checked(w io.Writer, dir string, damage []*badgerstore.CorruptError) {
	if len(damage) == 0 {
		fmt.Fprintf(w, "The store at %s is healthy.\n", Clean(dir))
		return
	}
	printDamage(w, damage)
}

// Recovered writes what records doctor did to the store in dir: nothing
// (it is healthy), or where the damaged store went, what the new store
// holds, and what was lost.
func Recovered(w io.Writer, dir string, rec *doctor.Recovery) {
	if rec.Aside == "" {
		fmt.Fprintf(w, "The store at %s is healthy: nothing to do.\n", Clean(dir))
		return
	}
	if rec.Resumed {
		fmt.Fprintf(w, "Finished a doctor run on %s that was cut short.\n", Clean(dir))
		fmt.Fprintf(w, "The damaged store is at %s, kept as it was.\n", Clean(rec.Aside))
		fmt.Fprintf(w, "The new store at %s holds what could be read:\n", Clean(dir))
		printKept(w, rec)
		return
	}
	printDamage(w, rec.Damage)
	fmt.Fprintf(w, "\nMoved the damaged store to %s, where it is kept as it was.\n", Clean(rec.Aside))
	fmt.Fprintf(w, "Created a new store at %s, holding what could be read:\n", Clean(dir))
	printKept(w, rec)
	if len(rec.Lost) == 0 {
		fmt.Fprintln(w, "Nothing was lost.")
		return
	}
	fmt.Fprintln(w, "Could not be read, and lost:")
	for _, l := range rec.Lost {
		fmt.Fprintf(w, "  %s\n", Clean(l))
	}
	if rec.LostEntries > 0 {
		fmt.Fprintf(w, "At least %d entries were lost: each a record, a chunk of up to 256 records written together, a session row or a tally.\n", rec.LostEntries)
	}
}

// printKept prints what the new store of rec holds, by kind.
func printKept(w io.Writer, rec *doctor.Recovery) {
	kinds := make([]string, 0, len(rec.Kept))
	for k := range rec.Kept {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	if len(kinds) == 0 && rec.Tallies == 0 && rec.Importer == 0 {
		fmt.Fprintln(w, "  nothing")
	}
	for _, k := range kinds {
		switch n := rec.Kept[k]; k {
		case "sessions":
			fmt.Fprintf(w, "  %-12s %s\n", "sessions", Plural(n, "session row"))
		case "":
			fmt.Fprintf(w, "  %-12s %d entries otelrecords does not know\n", "(other)", n)
		default:
			fmt.Fprintf(w, "  %-12s %s\n", Clean(k), Plural(n, "record"))
		}
	}
	if rec.Tallies > 0 {
		fmt.Fprintf(w, "  %-12s %s of what kept sessions let go\n", "tallies", plurals(rec.Tallies, "tally", "tallies"))
	}
	if rec.Importer > 0 {
		fmt.Fprintf(w, "  %-12s %s of an Importer's bookkeeping\n", "importer", plurals(rec.Importer, "entry", "entries"))
	}
	if rec.Spool {
		fmt.Fprintln(w, "  and the spool (records set aside while the store was busy), which the next program to open the store writes in")
	}
}

// plurals is Plural for a word whose plural is not its singular and s.
func plurals(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// printDamage prints the files found damaged, and why.
func printDamage(w io.Writer, damage []*badgerstore.CorruptError) {
	fmt.Fprintln(w, "Damaged:")
	for _, d := range damage {
		problem := d.Problem
		if d.Err != nil {
			problem += ": " + d.Err.Error()
		}
		fmt.Fprintf(w, "  %s: %s\n", Clean(d.File), Clean(strings.TrimSpace(problem)))
	}
}
