package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/explain"
	recordkeys "github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) diffCommand() *cobra.Command {
	var (
		asJSON     bool
		against    string
		kind       string
		keys       []string
		ignore     []string
		sessionA   sessionFlag
		sessionB   sessionFlag
		failSlower float64
	)
	cmd := &cobra.Command{
		Use:   "diff [--session A] (--against DIR | --against-session B)",
		Short: "Show what one store or session recorded that another did not, and how long each took",
		Long: `Compare what two sides recorded, and how long it took them. Side A is the
store --dir, or its session --session; side B is the store --against, or
the session --against-session of the store --against (of --dir when
--against is not given): say a build machine's store and a laptop's, or
yesterday's build and today's in one store.

Records are matched by kind, name and key attributes: by default the
attributes named "key" or ending in ".key" (autotune.key), or those --key
names. For each match the newest record of each side is compared,
attribute by attribute, and a difference is shown:

  ~  recorded on both sides, with different attributes (a key tuned to a
     different winner: winner: tiled → simd)
  -  recorded only in A
  +  recorded only in B

The counts say how many records of the match each side holds. Attributes
that change from run to run can be left out with --ignore.

Then the times, A's and B's, and how B's compares (+25% is slower): the
duration (of a store, its sessions' added up), each kind's time (counted
once within each session: records inside or beside one another add only
what the others did not cover), and each key both sides recorded (its
newest record's wall). --fail-slower PCT exits with status 1, naming what
did, when B's duration, a kind's time or a key's wall is more than PCT
percent longer than A's.

With --json, one JSON object per key and line: change ("same", "changed",
"only_in_a" or "only_in_b"), kind, name, key (the key attributes), a and b
({count, attributes, wall_ns}: count 0 where that side has none) and
differences ([{key, a, b}], a value or null where that side has no such
attribute); then one per time, {total: "duration" or "kind", kind, a:
{wall_ns}, b: {wall_ns}}. Both stores are only read.`,
		Example: `  records diff --dir ./ci-store --against ~/.cache/otelrecords/default
  records diff --session 1735787045006000000 --against-session 1735790645006000000 --fail-slower 10
  records diff --dir A --against B --kind autotune --ignore tried
  records diff --dir A --against B --key kernel --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sessionA.parse(cmd)
			sessionB.set = cmd.Flags().Changed("against-session")
			if against == "" && !sessionB.set {
				return usageError{errors.New("give what to compare with: a store, --against DIR, or a session, --against-session ID")}
			}
			if cmd.Flags().Changed("fail-slower") && (failSlower < 0 || math.IsNaN(failSlower) || math.IsInf(failSlower, 0)) {
				return usageError{fmt.Errorf("--fail-slower %v: want a percentage, 0 or more", failSlower)}
			}
			var kinds []string
			if kind != "" {
				k, err := recordkeys.CheckKind(kind)
				if err != nil {
					return usageError{fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
			m := explain.Match{Keys: keys, Ignore: ignore}
			// B is read as A is, with every other flag the same.
			b := *a
			if against != "" {
				b.dir, b.dirFlag = against, "--against"
			}
			var sides [2]diffSide
			for i, side := range []struct {
				store   *app
				session sessionFlag
			}{{a, sessionA}, {&b, sessionB}} {
				err := side.store.read(cmd, func(r *sessions.Records) error {
					dir, _ := side.store.storeDir() // read has found it
					sides[i] = diffSide{dir: dir, session: side.session}
					if side.session.set {
						if _, err := pickSession(r, side.session); err != nil {
							return err
						}
					}
					var err error
					sides[i].Side, err = m.Read(r, kinds, side.session.readOptions()...)
					return err
				})
				if err != nil {
					return err
				}
			}
			c := explain.Diff(sides[0].Side, sides[1].Side)
			if err := printDiff(cmd, sides, c, asJSON); err != nil {
				return err
			}
			if cmd.Flags().Changed("fail-slower") {
				return slowerError(c.Slower(failSlower), failSlower)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&against, "against", "", "the other store's `directory` (B)")
	sessionA.register(cmd, "compare only this `session` of --dir (A)")
	cmd.Flags().Var(&sessionB, "against-session", "compare with this `session` (B), of --against or else of --dir")
	cmd.Flags().StringVar(&kind, "kind", "", "compare only records of this `kind`")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "match records by this attribute (repeatable; default: key and *.key)")
	cmd.Flags().StringArrayVar(&ignore, "ignore", nil, "do not compare this attribute (repeatable)")
	cmd.Flags().Float64Var(&failSlower, "fail-slower", 0, "exit 1 when B took more than `PCT` percent longer than A: its duration, a kind's time or a key's wall")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per key and per time, one per line")
	return cmd
}

// diffSide is one side of the diff, and where it was read.
type diffSide struct {
	*explain.Side
	dir     string
	session sessionFlag
}

// describe names the side: its store, or its session of the store.
func (s diffSide) describe() string {
	what := plural(s.Sessions, "session") + ", " + plural(s.Records, "record")
	if s.session.set {
		what = "session " + strconv.FormatUint(s.session.id, 10) + ", " + plural(s.Records, "record")
	}
	return clean(s.dir) + "  " + what + ", lasted " + formatDuration(s.Duration)
}

// diffJSON is a key as `records diff --json` prints it.
type diffJSON struct {
	Change      explain.Change `json:"change"`
	Kind        string         `json:"kind"`
	Name        string         `json:"name"`
	Key         sessions.Attrs `json:"key"`
	A           sideJSON       `json:"a"`
	B           sideJSON       `json:"b"`
	Differences []attrDiffJSON `json:"differences"`
}

// sideJSON is what one side holds of a key; count 0, attributes {} and
// wall_ns 0 when it holds nothing.
type sideJSON struct {
	Count      int            `json:"count"`
	Attributes sessions.Attrs `json:"attributes"`
	WallNs     int64          `json:"wall_ns"`
}

type attrDiffJSON struct {
	Key string          `json:"key"`
	A   *sessions.Value `json:"a"`
	B   *sessions.Value `json:"b"`
}

// totalJSON is a time as `records diff --json` prints it.
type totalJSON struct {
	Total string   `json:"total"` // "duration" or "kind"
	Kind  string   `json:"kind"`
	A     wallJSON `json:"a"`
	B     wallJSON `json:"b"`
}

type wallJSON struct {
	WallNs int64 `json:"wall_ns"`
}

func sideOf(e *explain.Entry) sideJSON {
	if e == nil {
		return sideJSON{Attributes: sessions.Attrs{}}
	}
	return sideJSON{Count: e.Count, Attributes: e.Attributes, WallNs: int64(e.Wall)}
}

var changeSigns = map[explain.Change]string{explain.Same: "=", explain.Changed: "~", explain.OnlyInA: "-", explain.OnlyInB: "+"}

func printDiff(cmd *cobra.Command, sides [2]diffSide, c explain.Comparison, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		for _, k := range c.Keys {
			e := k.Entry()
			d := diffJSON{
				Change:      k.Change,
				Kind:        e.Kind,
				Name:        e.Name,
				Key:         e.Key,
				A:           sideOf(k.A),
				B:           sideOf(k.B),
				Differences: make([]attrDiffJSON, len(k.Differences)),
			}
			for i, ad := range k.Differences {
				d.Differences[i] = attrDiffJSON{ad.Key, ad.Before, ad.After}
			}
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		totals := append([]explain.Total{c.Duration}, c.Kinds...)
		for _, t := range totals {
			j := totalJSON{Total: "kind", Kind: t.Kind, A: wallJSON{int64(t.A)}, B: wallJSON{int64(t.B)}}
			if t.Kind == "" {
				j.Total = "duration"
			}
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
		return out.Flush()
	}

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
	if changed == 0 {
		if _, err := fmt.Fprintln(out, "\nno differences: both recorded the same kinds, names, keys and attributes"); err != nil {
			return err
		}
	} else {
		if _, err := fmt.Fprintln(out); err != nil {
			return err
		}
		t := newTable(out)
		if err := t.row(" ", "KIND", "RECORD", "A", "B", "DIFFERENCE"); err != nil {
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
				what = "only in A"
			case explain.OnlyInB:
				what = "only in B"
			default:
				parts := make([]string, len(k.Differences))
				for i, d := range k.Differences {
					parts[i] = clean(d.Key) + ": " + formatSide(d.Before) + " → " + formatSide(d.After)
				}
				what = strings.Join(parts, ", ")
			}
			if err := t.row(changeSigns[k.Change], e.Kind, recordName(e), countOf(k.A), countOf(k.B), what); err != nil {
				return err
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
	}

	// The times: the duration, each kind's, and each key both recorded.
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	t := newTable(out)
	if err := t.row("TIME", "KIND", "RECORD", "A", "B", "B VS A"); err != nil {
		return err
	}
	if err := t.row("duration", "-", "-", formatDuration(c.Duration.A), formatDuration(c.Duration.B), formatChange(c.Duration.A, c.Duration.B)); err != nil {
		return err
	}
	for _, k := range c.Kinds {
		if err := t.row("kind", k.Kind, "-", formatDuration(k.A), formatDuration(k.B), formatChange(k.A, k.B)); err != nil {
			return err
		}
	}
	for _, k := range c.Keys {
		if k.A == nil || k.B == nil {
			continue
		}
		if err := t.row("record", k.A.Kind, recordName(k.A), formatDuration(k.A.Wall), formatDuration(k.B.Wall), formatChange(k.A.Wall, k.B.Wall)); err != nil {
			return err
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return out.Flush()
}

// recordName names a key: its record's name and key attributes.
func recordName(e *explain.Entry) string {
	name := orDash(e.Name)
	if len(e.Key) > 0 {
		name += " " + formatAttrs(e.Key)
	}
	return name
}

// formatChange says how b compares with a: "+25%" (slower), "-8%",
// "same", or "-" where a is zero.
func formatChange(a, b time.Duration) string {
	switch {
	case a == b:
		return "same"
	case a <= 0:
		return "-"
	}
	pct := 100 * (float64(b) - float64(a)) / float64(a)
	return fmt.Sprintf("%+.0f%%", pct)
}

// slowerError names what took longer on side B than on side A by more
// than pct percent, or is nil when nothing did.
func slowerError(slower []explain.Slowdown, pct float64) error {
	if len(slower) == 0 {
		return nil
	}
	const most = 10 // named in the message; the table has them all
	parts := make([]string, 0, min(len(slower), most))
	for _, s := range slower[:min(len(slower), most)] {
		var what string
		switch {
		case s.Key != nil:
			what = s.Key.A.Kind + " " + recordName(s.Key.A)
		case s.Total.Kind != "":
			what = "kind " + clean(s.Total.Kind)
		default:
			what = "the duration"
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s (%s)", what, formatDuration(s.A), formatDuration(s.B), formatChange(s.A, s.B)))
	}
	msg := strings.Join(parts, "; ")
	if len(slower) > most {
		msg += fmt.Sprintf("; and %d more", len(slower)-most)
	}
	return fmt.Errorf("B took more than %s%% longer than A: %s", strconv.FormatFloat(pct, 'f', -1, 64), msg)
}

func formatSide(v *sessions.Value) string {
	if v == nil {
		return "(none)"
	}
	return formatValue(*v)
}

func countOf(e *explain.Entry) string {
	if e == nil {
		return "0"
	}
	return strconv.Itoa(e.Count)
}

// plural formats n things, as "1 session" or "2 sessions".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
