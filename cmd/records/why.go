package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/views"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) whyCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "why KIND KEY=VALUE",
		Short: "Say why each record of a key was done: new, cached, or done again and why",
		Long: `List every record of KIND whose attribute KEY has VALUE (as records show
--where compares it), across sessions, oldest first (a session's records
in the order they started, which through a Collector need not be the
order of their seqs), each with why it was done:

  new          the first record of this key in the store
  observed     a hit: an observed record inside which nothing changed
               either: the cache answered (a lookup that finds what an
               earlier one filled, by changing something or computing
               inside, is a hit)
  new_here     new here — another instance: the first record of this key
               on its instance, after another instance (another
               service.instance.id or host.name) did the work with a
               cache of its own
  raced        work done while another record of the key, in the same
               session, was still doing it: requests that computed the
               key at once, neither waiting for the other
  inputs       an input attribute differs from the record before: the work
               asked was not the same
  environment  the same inputs, but the session's environment differs from
               the one before: otelrecords' version, os, arch, or a
               Resource attribute such as service.version
  forgotten    the same inputs in the same environment on the same
               instance, done again: the cache lost what it had

Every record but a hit is work, and has one of the reasons after
observed: a miss too — an observed record inside which a record (a child,
at any depth, of any kind) changed something: the cache did not answer,
and the work was done inside it. Its line says so, and names the first
record inside that changed ("missed: compile compile.key=k3 inside
changed").

A record is compared with the latest record of the key before it, on the
same instance, that did the work (not observed). A record says which
attributes its span started with (its inputs: what it was asked to do)
and which were set while it ran (its outcome: the winner), and whether it
changed anything; records that do not say their inputs (spans that
crossed OTLP, and records of stores written before records said them)
read every attribute as an input but outcomes, the keys named (or ending
in .) winner, result, outcome, status, error, speedup, tried, hit,
cached, bytes, size, elapsed or duration (see explain.StoredBody).
Resource attributes that differ from one process to the next (process.*,
service.instance.id) are not the environment.

Work done again with the same inputs (environment, forgotten) also says
what it came out as, before and after: "came out differently: winner:
tiled → simd" when an outcome differs (the work was not redundant: the
answer changed), "came out the same: winner=tiled" when none does.

After a session's records, a line says how often the session hit the key
without keeping a record of it: the records its tally counted (let go,
every one a hit; only for KEY "key" or a name ending in ".key", which a
tally keeps), how long they took (median, mean, shortest to longest),
and the values their outcome attribute (result, or a name ending in
.result) took, counted ("results: hit=388 miss=1").

With --json, one JSON object per record and line: session (a string, as
every session id the JSON output prints), seq, kind, name, wall_ns, effect
("changed", "observed", or null for a record that does not say), verdict
("changed", "missed", "hit", or null where the effect is not known),
reason (one of the words above), inside (of a miss, the first record
inside it that changed something: {seq, kind, name, key}; null
otherwise), previous ({session, seq} of the record compared with, or
null), at_once (for raced, how many records of the key ran at once, this
one included; 0 otherwise), differences ([{key, before, after}], a value
or null where that side has none: inputs, environment, or for new_here
the instance keys), outcome (for work done again with the same inputs,
every outcome attribute as [{key, before, after}]; [] otherwise) and
outcome_changed (whether one of them differs); and per session's tally of
the key, {session, kind, name, key, tallied, wall_ns, min_ns, max_ns,
median_ns, mean_ns, outcomes} (docs/FORMAT.md §8.5).`,
		Example: `  records why autotune autotune.key=matmul_1024
  records why compile kernel=softmax_f16 --json | jq -r .reason`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := keys.CheckKind(args[0])
			if err != nil {
				return usageError{Err: fmt.Errorf("kind %q: %w", args[0], err)}
			}
			key, value, ok := strings.Cut(args[1], "=")
			if !ok || key == "" {
				return usageError{Err: fmt.Errorf("%q: want KEY=VALUE, an attribute and its value", args[1])}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				if err := needKindOrTallied(r, kind); err != nil {
					return err
				}
				return views.Why(cmd.OutOrStdout(), r, kind, key, value, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	return cmd
}
