package views

import (
	"bufio"
	"fmt"
	"io"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
)

// Diff prints the comparison, as JSON Lines or as text, with how often
// each key hit on either side, kept and tallied hits together (the sides'
// Tally, read). keyed says the records were matched by --key attributes
// other than the default, which tallies keep only in part.
func Diff(w io.Writer, sides [2]render.DiffSide, c explain.Comparison, keyed, asJSON bool) error {
	out := bufio.NewWriter(w)
	hits := summary.Hits(c, sides[0].Tally, sides[1].Tally)
	if !asJSON {
		if err := render.Diff(out, sides, c); err != nil {
			return err
		}
		if err := render.DiffHits(out, hits); err != nil {
			return err
		}
		for i, s := range sides {
			name := []string{"A", "B"}[i]
			switch note := TallyNote(s.Tally); {
			case s.Tally != nil && s.Tally.Sessions > 0 && !s.Tally.Tallied():
				fmt.Fprintf(out, "%s keeps no tally of what it let go (written before tallies): its hits are of kept records only, and a key it does not list may have hit there.\n", name)
			case note != "":
				fmt.Fprintf(out, "%s: %s\n", name, note)
			}
		}
		if keyed && (sides[0].Tally.Tallied() || sides[1].Tally.Tallied()) {
			fmt.Fprintln(out, "Tallies keep the attributes key and *.key: a tallied hit is matched on those --key names, under its kind and name alone when it has none of them.")
		}
		return out.Flush()
	}
	enc := api.NewEncoder(out)
	for _, k := range c.Keys {
		d := api.NewDiffKey(k)
		e := k.Entry()
		d.TalliedA = sides[0].Tally.Of(e.Kind, e.Name, e.Key).Count
		d.TalliedB = sides[1].Tally.Of(e.Kind, e.Name, e.Key).Count
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	for _, t := range api.NewDiffTotals(c) {
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	for _, h := range hits {
		if err := enc.Encode(api.NewHitRate(h)); err != nil {
			return err
		}
	}
	if len(c.LeftOut) > 0 {
		if err := enc.Encode(api.LeftOut{LeftOut: c.LeftOut}); err != nil {
			return err
		}
	}
	if err := enc.Encode(api.NewDiffTallies(sides[0].Tally, sides[1].Tally)); err != nil {
		return err
	}
	return out.Flush()
}
