package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/views"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
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
  =  hits kept on one side, only tallied on the other: no difference

The counts say how many records of the match each side holds. A kept
session's tally counts the records it let go (every one a hit) by kind,
name and key: a match only one side recorded says, of the other side,
"only hit it: 12 hits, tallied" when that side's tally counted the key,
and "not done or looked up" when it neither recorded nor tallied it. Below the
times, each key that hit on either side: its hits of its lookups on each
side ("12/13 92%, 12 tallied": kept and tallied hits, against its kept
records that were not hits), and the median and the mean time of a hit
(the median from the tallies' histograms). A side whose sessions keep
no tally (a store written before tallies) is said to count kept records
only. Tallies keep the attributes key and *.key: with --key, a tallied
hit is matched on those of them --key names, and under its kind and
name alone when it has none.

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
{left_out: [the keys]}. Each match also has tallied_a and tallied_b (the
hits each side tallied of its key), each key that hit is an object
{hit_rate, kind, name, key, a, b}, and the last line is {tallies:
"sessions", a, b}: how many sessions of each side keep no tally
(docs/FORMAT.md §8.5). Both stores are only read.`,
		Example: `  records diff --dir ./ci-store --against ~/.cache/otelrecords/default
  records diff --session 1735787045006000000 --against-session 1735790645006000000 --fail-slower 10
  records diff --dir A --against B --kind autotune --ignore tried
  records diff --session 1735787045006000000 --against-session 1735790645006000000 --ignore 'user_agent.*,http.response.body.size' --fail-slower 50 --min-delta 5ms
  records diff --dir A --against B --key kernel --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sessionA.parse(cmd)
			sessionB.set = cmd.Flags().Changed("against-session")
			if against == "" && !sessionB.set {
				return usageError{Err: errors.New("give what to compare with: a store, --against DIR, or a session, --against-session ID")}
			}
			if cmd.Flags().Changed("fail-slower") && (failSlower < 0 || math.IsNaN(failSlower) || math.IsInf(failSlower, 0)) {
				return usageError{Err: fmt.Errorf("--fail-slower %v: want a percentage, 0 or more", failSlower)}
			}
			if minDelta < 0 {
				return usageError{Err: fmt.Errorf("--min-delta %v: want a duration, 0 or more", minDelta)}
			}
			m := explain.Match{Keys: keys, Ignore: splitList(ignore), Connections: allAttrs}
			if err := m.Check(); err != nil {
				return usageError{Err: fmt.Errorf("--ignore %w", err)}
			}
			var kinds []string
			if kind != "" {
				k, err := recordkeys.CheckKind(kind)
				if err != nil {
					return usageError{Err: fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
			// B is read as A is, with every other flag the same.
			b := *a
			if against != "" {
				b.Dir, b.Flag = against, "--against"
			}
			var sides [2]render.DiffSide
			for i, side := range []struct {
				store   *app
				session sessionFlag
			}{{a, sessionA}, {&b, sessionB}} {
				err := side.store.read(cmd, func(r *sessions.Records) error {
					sides[i] = render.DiffSide{Store: side.store.Name()} // read has found it
					if side.session.set {
						if _, err := pickSession(r, side.session); err != nil {
							return err
						}
						id := sessions.SessionID(side.session.id)
						sides[i].Session = &id
					}
					var err error
					if sides[i].Side, err = m.Read(r, kinds, side.session.readOptions()...); err != nil {
						return err
					}
					sides[i].Tally, err = tallied.Read(r, m.KeyOf, kinds, false, side.session.readOptions()...)
					return err
				})
				if err != nil {
					return err
				}
			}
			c := explain.Diff(sides[0].Side, sides[1].Side)
			if err := views.Diff(cmd.OutOrStdout(), sides, c, keys != nil, asJSON); err != nil {
				return err
			}
			if cmd.Flags().Changed("fail-slower") {
				return render.SlowerError(c.Slower(failSlower, minDelta), failSlower, minDelta)
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
