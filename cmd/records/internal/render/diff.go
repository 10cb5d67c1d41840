package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
)

// DiffSide is one side of a diff, and where it was read.
type DiffSide struct {
	*explain.Side
	// Store names the store (or the stores, read as one).
	Store string
	// Session is the session compared, when one is; nil for the store.
	Session *sessions.SessionID
	// Tally is what the side's sessions let go, counted (tallied.Read,
	// keyed as the diff matches); nil when not read.
	Tally *tallied.Sum
}

// describe names the side: its store, or its session of the store.
func (s DiffSide) describe() string {
	what := Plural(s.Sessions, "session") + ", " + Plural(s.Records, "record")
	if s.Session != nil {
		what = "session " + strconv.FormatUint(uint64(*s.Session), 10) + ", " + Plural(s.Records, "record")
	}
	return Clean(s.Store) + "  " + what + ", lasted " + Duration(s.Duration)
}

var changeSigns = map[explain.Change]string{explain.Same: "=", explain.Changed: "~", explain.OnlyInA: "-", explain.OnlyInB: "+"}

// Diff writes what the two sides recorded differently, as records diff
// prints it: the sides, the matches that differ, the times, and each
// match both recorded.
func Diff(out io.Writer, sides [2]DiffSide, c explain.Comparison) error {
	for i, s := range sides {
		if _, err := fmt.Fprintf(out, "%s  %s\n", []string{"A", "B"}[i], s.describe()); err != nil {
			return err
		}
	}
	changed := 0
	for _, k := range c.Keys {
		if k.Change != explain.Same {
			changed++
		}
	}
	if len(c.LeftOut) > 0 {
		if _, err := fmt.Fprintf(out, "left out, as they name a connection or a listener, not the work (--all-attributes compares them): %s\n",
			Clean(strings.Join(c.LeftOut, ", "))); err != nil {
			return err
		}
	}
	if changed == 0 {
		if _, err := fmt.Fprintln(out, "\nno differences: both recorded the same kinds, names, keys and attributes"); err != nil {
			return err
		}
	} else {
		if _, err := fmt.Fprintln(out); err != nil {
			return err
		}
		t := NewTable(out)
		if err := t.Row(" ", "KIND", "RECORD", "A", "B", "DIFFERENCE"); err != nil {
			return err
		}
		for _, k := range c.Keys {
			if k.Change == explain.Same {
				continue
			}
			e := k.Entry()
			var what string
			switch k.Change {
			case explain.OnlyInA:
				what = Absent(c, e, sides[1], "B", "removed: only in A")
			case explain.OnlyInB:
				what = Absent(c, e, sides[0], "A", "added: only in B")
			default:
				parts := make([]string, len(k.Differences))
				for i, d := range k.Differences {
					parts[i] = Clean(d.Key) + ": " + side(d.Before) + " → " + side(d.After)
				}
				what = strings.Join(parts, ", ")
			}
			sign := changeSigns[k.Change]
			if strings.HasPrefix(what, bothHit) {
				sign = changeSigns[explain.Same] // a hit on both sides, one side's tallied
			}
			if err := t.Row(sign, e.Kind, RecordName(e), countOf(k.A), countOf(k.B), what); err != nil {
				return err
			}
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}

	// The totals: the duration and each kind's time.
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	t := NewTable(out)
	if err := t.Row("TIME", "KIND", "A", "B", "B VS A"); err != nil {
		return err
	}
	if err := t.Row("duration", "-", Duration(c.Duration.A), Duration(c.Duration.B), Change(c.Duration.A, c.Duration.B)); err != nil {
		return err
	}
	for _, k := range c.Kinds {
		if err := t.Row("kind", k.Kind, Duration(k.A), Duration(k.B), Change(k.A, k.B)); err != nil {
			return err
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	// Each match both recorded, like with like: medians and totals.
	both := 0
	for _, k := range c.Keys {
		if k.A != nil && k.B != nil {
			both++
		}
	}
	if both == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	t = NewTable(out)
	if err := t.Row("KIND", "RECORD", "EFFECT", "COUNT A", "COUNT B", "MEDIAN A", "MEDIAN B", "TOTAL A", "TOTAL B", "B VS A"); err != nil {
		return err
	}
	for _, k := range c.Keys {
		if k.A == nil || k.B == nil {
			continue
		}
		if err := t.Row(k.A.Kind, RecordName(k.A), OrDash(Verdict(k.A.Verdict)), strconv.Itoa(k.A.Count), strconv.Itoa(k.B.Count),
			Duration(k.A.Median), Duration(k.B.Median), Duration(k.A.Total), Duration(k.B.Total),
			Change(k.A.Median, k.B.Median)); err != nil {
			return err
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	return nil
}

// RecordName names a key: its record's name and key attributes.
func RecordName(e *explain.Entry) string {
	name := OrDash(e.Name)
	if len(e.Key) > 0 {
		name += " " + Attrs(e.Key)
	}
	return name
}

// Change says how b compares with a: "+25%" (slower), "-8%",
// "same", or "-" where a is zero.
func Change(a, b time.Duration) string {
	switch {
	case a == b:
		return "same"
	case a <= 0:
		return "-"
	}
	pct := 100 * (float64(b) - float64(a)) / float64(a)
	return fmt.Sprintf("%+.0f%%", pct)
}

// SlowerError names the keys whose median wall grew from side A to side
// B by more than pct percent and minDelta, or is nil when none did.
func SlowerError(slower []explain.Slowdown, pct float64, minDelta time.Duration) error {
	if len(slower) == 0 {
		return nil
	}
	const most = 10 // named in the message; the table has them all
	parts := make([]string, 0, min(len(slower), most))
	for _, s := range slower[:min(len(slower), most)] {
		what := s.Key.A.Kind + " " + RecordName(s.Key.A)
		if v := Verdict(s.Key.A.Verdict); v != "" {
			what += " (" + v + ")"
		}
		parts = append(parts, fmt.Sprintf("%s median %s → %s (%s)", what, Duration(s.A), Duration(s.B), Change(s.A, s.B)))
	}
	msg := strings.Join(parts, "; ")
	if len(slower) > most {
		msg += fmt.Sprintf("; and %d more", len(slower)-most)
	}
	return fmt.Errorf("B took more than %s%% (and %s) longer than A: %s", strconv.FormatFloat(pct, 'f', -1, 64), Duration(minDelta), msg)
}

func side(v *sessions.Value) string {
	if v == nil {
		return "(none)"
	}
	return Value(*v)
}

func countOf(e *explain.Entry) string {
	if e == nil {
		return "0"
	}
	return strconv.Itoa(e.Count)
}
