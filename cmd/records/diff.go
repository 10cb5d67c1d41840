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
		minDelta   time.Duration
		allAttrs   bool
	)
	cmd := &cobra.Command{
		Use:   "diff [--session A] (--against DIR | --against-session B)",
		Short: "Show what one store or session recorded that another did not, and how long each took",
		Long: `Compare what two sides recorded, and how long it took them. Side A is the
store --dir, or its session --session; side B is the store --against, or
the session --against-session of the store --against (of --dir when
--against is not given): say a build machine's store and a laptop's, or
yesterday's build and today's in one store.

Records are matched by kind, name, what they did and key attributes: by
default the attributes named "key" or ending in ".key" (autotune.key), or
those --key names. Like is compared with like: a key's records that
changed something (work done) with the other side's that did, its misses
(records that changed nothing themselves, but inside which a record did:
a lookup that compiled) with misses, and its hits (nothing changed, in
them or inside them) with hits. For each match the newest record of each
side is compared, attribute by attribute, and a difference is shown:

  ~  recorded on both sides, with different attributes (a key tuned to a
     different winner: winner: tiled → simd)
  -  recorded only in A (removed)
  +  recorded only in B (added)

The counts say how many records of the match each side holds.

Attributes that name a connection or a listener rather than the work are
left out, and the output says which it left out: those OpenTelemetry's
semantic conventions define per connection (network.peer.*,
network.local.port, client.address, client.port, client.socket.*,
server.socket.*, and the older net.sock.*, net.peer.ip, net.peer.port),
which differ at every request, and on a server's spans the port it
listens on (server.port, net.host.port), which a server that takes any
free port changes at every run. --all-attributes compares them too.
Other attributes that change from run to run can be left out with
--ignore, a comma list that may be repeated and may hold * patterns (a *
stands for any run of characters but /): --ignore
'user_agent.*,http.response.body.size' leaves out the client's user agent
and the size of each response.

Then the times, A's and B's, and how B's compares (+25% is slower): the
duration (of a store, its sessions' added up) and each kind's time
(counted once within each session: records inside or beside one another
add only what the others did not cover); then each match both sides
recorded: its count, the median and the total of its records' walls.

--fail-slower PCT is a gate: it exits with status 1, naming on stderr each
match whose median wall on B is more than PCT percent longer than A's and
longer by more than --min-delta (1ms by default), so that hits that took
3µs and 5µs never trip it. Matches recorded on one side only are added or
removed, never slower; the totals are shown, not judged (a server's
session lasts as long as it ran, whatever its work took).

With --json, one JSON object per match and line: change ("same",
"changed", "only_in_a" or "only_in_b"), kind, name, key (the key
attributes), effect ("changed", "observed", or null for records that do
not say), verdict ("changed", "missed", "hit", or null), count_a, count_b, median_a_ns, median_b_ns, total_a_ns,
total_b_ns (0 where that side has none), a and b ({count, attributes,
wall_ns}: wall_ns is the median; count 0 where that side has none) and
differences ([{key, a, b}], a value or null where that side has no such
attribute); then one per time, {total: "duration" or "kind", kind, a:
{wall_ns}, b: {wall_ns}}; then, when attributes were left out by default,
{left_out: [the keys]}. Both stores are only read.`,
		Example: `  records diff --dir ./ci-store --against ~/.cache/otelrecords/default
  records diff --session 1735787045006000000 --against-session 1735790645006000000 --fail-slower 10
  records diff --dir A --against B --kind autotune --ignore tried
  records diff --session A --against-session B --ignore 'user_agent.*,http.response.body.size' --fail-slower 50 --min-delta 5ms
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
			if minDelta < 0 {
				return usageError{fmt.Errorf("--min-delta %v: want a duration, 0 or more", minDelta)}
			}
			m := explain.Match{Keys: keys, Ignore: splitList(ignore), Connections: allAttrs}
			if err := m.Check(); err != nil {
				return usageError{fmt.Errorf("--ignore %w", err)}
			}
			var kinds []string
			if kind != "" {
				k, err := recordkeys.CheckKind(kind)
				if err != nil {
					return usageError{fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
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
					dir := side.store.storeName() // read has found it
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
				return slowerError(c.Slower(failSlower, minDelta), failSlower, minDelta)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&against, "against", "", "the other store's `directory` (B)")
	sessionA.register(cmd, "compare only this `session` of --dir (A)")
	cmd.Flags().Var(&sessionB, "against-session", "compare with this `session` (B), of --against or else of --dir")
	cmd.Flags().StringVar(&kind, "kind", "", "compare only records of this `kind`")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "match records by this attribute (repeatable; default: key and *.key)")
	cmd.Flags().StringArrayVar(&ignore, "ignore", nil, "do not compare these `attributes`: a comma list, * patterns allowed (repeatable)")
	cmd.Flags().Float64Var(&failSlower, "fail-slower", 0, "exit 1 when a key's median wall on B is more than `PCT` percent longer than on A (and longer by more than --min-delta)")
	cmd.Flags().DurationVar(&minDelta, "min-delta", time.Millisecond, "with --fail-slower, a key's median must also grow by more than this `duration`")
	cmd.Flags().BoolVar(&allAttrs, "all-attributes", false, "compare the attributes of a connection (network.peer.*, client.*...) and a server span's server.port too")
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
	Effect      *string        `json:"effect"`
	Verdict     *string        `json:"verdict"`
	CountA      int            `json:"count_a"`
	CountB      int            `json:"count_b"`
	MedianANs   int64          `json:"median_a_ns"`
	MedianBNs   int64          `json:"median_b_ns"`
	TotalANs    int64          `json:"total_a_ns"`
	TotalBNs    int64          `json:"total_b_ns"`
	A           sideJSON       `json:"a"`
	B           sideJSON       `json:"b"`
	Differences []attrDiffJSON `json:"differences"`
}

// sideJSON is what one side holds of a key: wall_ns is its records'
// median; count 0, attributes {} and wall_ns 0 when it holds nothing.
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
	return sideJSON{Count: e.Count, Attributes: e.Attributes, WallNs: int64(e.Median)}
}

var changeSigns = map[explain.Change]string{explain.Same: "=", explain.Changed: "~", explain.OnlyInA: "-", explain.OnlyInB: "+"}

func printDiff(cmd *cobra.Command, sides [2]diffSide, c explain.Comparison, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		for _, k := range c.Keys {
			e := k.Entry()
			a, b := sideOf(k.A), sideOf(k.B)
			d := diffJSON{
				Change:      k.Change,
				Kind:        e.Kind,
				Name:        e.Name,
				Key:         e.Key,
				Effect:      nullable(e.Effect),
				Verdict:     nullable(verdictName(e.Verdict)),
				CountA:      a.Count,
				CountB:      b.Count,
				MedianANs:   a.WallNs,
				MedianBNs:   b.WallNs,
				TotalANs:    totalOf(k.A),
				TotalBNs:    totalOf(k.B),
				A:           a,
				B:           b,
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
		if len(c.LeftOut) > 0 {
			if err := enc.Encode(struct {
				LeftOut []string `json:"left_out"`
			}{c.LeftOut}); err != nil {
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
	if len(c.LeftOut) > 0 {
		if _, err := fmt.Fprintf(out, "left out, as they name a connection or a listener, not the work (--all-attributes compares them): %s\n",
			clean(strings.Join(c.LeftOut, ", "))); err != nil {
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
				what = "removed: only in A"
			case explain.OnlyInB:
				what = "added: only in B"
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

	// The totals: the duration and each kind's time.
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	t := newTable(out)
	if err := t.row("TIME", "KIND", "A", "B", "B VS A"); err != nil {
		return err
	}
	if err := t.row("duration", "-", formatDuration(c.Duration.A), formatDuration(c.Duration.B), formatChange(c.Duration.A, c.Duration.B)); err != nil {
		return err
	}
	for _, k := range c.Kinds {
		if err := t.row("kind", k.Kind, formatDuration(k.A), formatDuration(k.B), formatChange(k.A, k.B)); err != nil {
			return err
		}
	}
	if err := t.flush(); err != nil {
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
		return out.Flush()
	}
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	t = newTable(out)
	if err := t.row("KIND", "RECORD", "EFFECT", "COUNT A", "COUNT B", "MEDIAN A", "MEDIAN B", "TOTAL A", "TOTAL B", "B VS A"); err != nil {
		return err
	}
	for _, k := range c.Keys {
		if k.A == nil || k.B == nil {
			continue
		}
		if err := t.row(k.A.Kind, recordName(k.A), orDash(verdictName(k.A.Verdict)), strconv.Itoa(k.A.Count), strconv.Itoa(k.B.Count),
			formatDuration(k.A.Median), formatDuration(k.B.Median), formatDuration(k.A.Total), formatDuration(k.B.Total),
			formatChange(k.A.Median, k.B.Median)); err != nil {
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

// slowerError names the keys whose median wall grew from side A to side
// B by more than pct percent and minDelta, or is nil when none did.
func slowerError(slower []explain.Slowdown, pct float64, minDelta time.Duration) error {
	if len(slower) == 0 {
		return nil
	}
	const most = 10 // named in the message; the table has them all
	parts := make([]string, 0, min(len(slower), most))
	for _, s := range slower[:min(len(slower), most)] {
		what := s.Key.A.Kind + " " + recordName(s.Key.A)
		if v := verdictName(s.Key.A.Verdict); v != "" {
			what += " (" + v + ")"
		}
		parts = append(parts, fmt.Sprintf("%s median %s → %s (%s)", what, formatDuration(s.A), formatDuration(s.B), formatChange(s.A, s.B)))
	}
	msg := strings.Join(parts, "; ")
	if len(slower) > most {
		msg += fmt.Sprintf("; and %d more", len(slower)-most)
	}
	return fmt.Errorf("B took more than %s%% (and %s) longer than A: %s", strconv.FormatFloat(pct, 'f', -1, 64), formatDuration(minDelta), msg)
}

// splitList splits each of values at commas, leaving out empty items and
// the spaces around each: --ignore 'a, b' --ignore c is a, b and c.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// verdictName returns what a key's records did, "changed", "missed" or
// "hit", or "" for records that do not say.
func verdictName(v explain.Verdict) string {
	if v == explain.Unknown {
		return ""
	}
	return v.String()
}

// nullable returns s, or nil for "": a JSON null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func totalOf(e *explain.Entry) int64 {
	if e == nil {
		return 0
	}
	return int64(e.Total)
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
