package render

import (
	"fmt"
	"io"
	"strconv"

	"github.com/otelrecords/otelrecords/explain"
)

// Cost writes what records cost prints: the time records spent in their
// children, by kinds, then the work recorded more than once; each table's
// rows left out (past --top) are counted below it.
func Cost(out io.Writer, children []explain.ChildWork, redone []explain.KeyWork, leftChildren, leftRedone int) error {
	if len(children) == 0 {
		fmt.Fprintln(out, "Time in children: no record has records inside it.")
	} else {
		fmt.Fprintln(out, "Time in children: what records of a kind spent in the records inside them")
		t := NewTable(out)
		if err := t.Row("PARENT", "CHILD", "PARENTS", "CHILDREN", "TIME", "CHANGED NOTHING"); err != nil {
			return err
		}
		for _, c := range children {
			unchanged := "unknown"
			if c.UnchangedKnown {
				unchanged = Duration(c.Unchanged) + " in " + ChildCount(c.UnchangedChildren)
			}
			if err := t.Row(c.Parent, c.Child, strconv.Itoa(c.Parents), strconv.Itoa(c.Children), Duration(c.Wall), unchanged); err != nil {
				return err
			}
		}
		if err := t.Flush(); err != nil {
			return err
		}
		if leftChildren > 0 {
			fmt.Fprintf(out, "and %d more (--top 0 lists them all)\n", leftChildren)
		}
	}
	fmt.Fprintln(out)
	if len(redone) == 0 {
		fmt.Fprintln(out, "Work and hits: no record was recorded more than once.")
	} else {
		fmt.Fprintln(out, "Work and hits: work recorded more than once, redone (changed again) or found done (hits)")
		t := NewTable(out)
		if err := t.Row("KIND", "RECORD", "TIMES", "SESSIONS", "TIME", "REDONE", "REDONE TIME", "RACED", "NEW HERE", "HITS", "HIT TIME", "MISSES"); err != nil {
			return err
		}
		for _, k := range redone {
			name := OrDash(k.Name)
			if len(k.Key) > 0 {
				name += " " + Attrs(k.Key)
			}
			if err := t.Row(k.Kind, name, strconv.Itoa(k.Records), strconv.Itoa(k.Sessions),
				Duration(k.Wall), strconv.Itoa(k.Redos), Duration(k.Redone), strconv.Itoa(k.Raced), strconv.Itoa(k.NewHere),
				Hits(k.Hits, k.Tallied), Duration(k.HitWall),
				strconv.Itoa(k.Misses)); err != nil {
				return err
			}
		}
		if err := t.Flush(); err != nil {
			return err
		}
		if leftRedone > 0 {
			fmt.Fprintf(out, "and %d more (--top 0 lists them all)\n", leftRedone)
		}
	}
	return nil
}

// Hits says how many hits, and how many of them were tallied (let go,
// counted, not kept): "390 (389 tallied)".
func Hits[N int | int64](hits, tallied N) string {
	s := strconv.FormatInt(int64(hits), 10)
	if tallied > 0 {
		s += " (" + strconv.FormatInt(int64(tallied), 10) + " tallied)"
	}
	return s
}

// ChildCount says how many children, in English.
func ChildCount(n int) string {
	if n == 1 {
		return "1 child"
	}
	return strconv.Itoa(n) + " children"
}
