package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/explain"
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
outcome_changed (whether one of them differs).`,
		Example: `  records why autotune autotune.key=matmul_1024
  records why compile kernel=softmax_f16 --json | jq -r .reason`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := keys.CheckKind(args[0])
			if err != nil {
				return usageError{fmt.Errorf("kind %q: %w", args[0], err)}
			}
			key, value, ok := strings.Cut(args[1], "=")
			if !ok || key == "" {
				return usageError{fmt.Errorf("%q: want KEY=VALUE, an attribute and its value", args[1])}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				if err := needKind(r, kind); err != nil {
					return err
				}
				return why(cmd, r, kind, key, value, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	return cmd
}

// whyJSON is a record as `records why --json` prints it.
type whyJSON struct {
	Session     sessions.SessionID `json:"session,string"`
	Seq         uint64             `json:"seq"`
	Kind        string             `json:"kind"`
	Name        string             `json:"name"`
	WallNs      int64              `json:"wall_ns"`
	Effect      *string            `json:"effect"`
	Verdict     *string            `json:"verdict"`
	Reason      explain.Cause      `json:"reason"`
	Inside      *insideJSON        `json:"inside"`
	Previous    *stampJSON         `json:"previous"`
	AtOnce      int                `json:"at_once"`
	Differences []differenceJSON   `json:"differences"`
	Outcome     []differenceJSON   `json:"outcome"`
	Changed     bool               `json:"outcome_changed"`
}

// insideJSON is, of a miss, the first record inside it that changed
// something.
type insideJSON struct {
	Seq  uint64         `json:"seq"`
	Kind string         `json:"kind"`
	Name string         `json:"name"`
	Key  sessions.Attrs `json:"key"`
}

// keyAttributes returns the key attributes of attrs ("key" and those
// ending in ".key", as explain's Match and Rework take them), in a new
// slice.
func keyAttributes(attrs sessions.Attrs) sessions.Attrs {
	var key sessions.Attrs
	for _, kv := range attrs {
		if (explain.Match{}).IsKey(kv.Key) {
			key = append(key, kv)
		}
	}
	return key
}

type stampJSON struct {
	Session sessions.SessionID `json:"session,string"`
	Seq     uint64             `json:"seq"`
}

type differenceJSON struct {
	Key    string          `json:"key"`
	Before *sessions.Value `json:"before"`
	After  *sessions.Value `json:"after"`
}

func why(cmd *cobra.Command, r *sessions.Records, kind, key, value string, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	enc := jsonLines(out)
	t := newTable(out)
	n := 0
	for reason, err := range explain.Why(r, kind, key, sessions.StringValue(value)) {
		if err != nil {
			t.flush()
			out.Flush() // show what was read before the error
			return err
		}
		if n++; asJSON {
			j := whyJSON{
				Session:     reason.Stamp.Session,
				Seq:         reason.Stamp.Seq,
				Kind:        reason.Kind,
				Name:        reason.Record.Name,
				WallNs:      int64(reason.Record.Wall),
				Effect:      effectOf(&reason.Record),
				Verdict:     nullable(verdictName(reason.Verdict)),
				Reason:      reason.Cause,
				AtOnce:      reason.AtOnce,
				Differences: make([]differenceJSON, len(reason.Differences)),
				Outcome:     make([]differenceJSON, len(reason.Outcome)),
				Changed:     reason.OutcomeChanged(),
			}
			for i, d := range reason.Outcome {
				j.Outcome[i] = differenceJSON{d.Key, d.Before, d.After}
			}
			if in := reason.Inside; in != nil {
				j.Inside = &insideJSON{in.Stamp.Seq, in.Kind, in.Record.Name, keyAttributes(in.Record.Attributes)}
				if j.Inside.Key == nil {
					j.Inside.Key = sessions.Attrs{}
				}
			}
			if reason.HasPrevious {
				j.Previous = &stampJSON{reason.Previous.Session, reason.Previous.Seq}
			}
			for i, d := range reason.Differences {
				j.Differences[i] = differenceJSON{d.Key, d.Before, d.After}
			}
			if err := enc.Encode(j); err != nil {
				return err
			}
			continue
		}
		if n == 1 {
			if err := t.row("SESSION", "SEQ", "WALL", "WHY"); err != nil {
				return err
			}
		}
		if err := t.row(reason.Stamp.Session.String(), strconv.FormatUint(reason.Stamp.Seq, 10),
			formatDuration(reason.Record.Wall), sayWhy(reason, key, value)); err != nil {
			return err
		}
		if n%dumpFlushEvery == 0 {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no record of kind %s has %s=%s", formatString(kind), formatString(key), formatString(value))
	}
	return nil
}

// sayWhy says why a record was done, in words.
func sayWhy(reason explain.Reason, key, value string) string {
	prev := ""
	if reason.HasPrevious {
		if reason.Previous.Session == reason.Stamp.Session {
			prev = "seq " + strconv.FormatUint(reason.Previous.Seq, 10) + " of this session"
		} else {
			prev = "session " + reason.Previous.Session.String()
		}
	}
	return sayCause(reason, key, value, prev) + sayOutcome(reason)
}

// sayCause says why the record was done, naming the record it was
// compared with as prev, and what a miss computed inside.
func sayCause(reason explain.Reason, key, value, prev string) string {
	what := formatString(key) + "=" + formatString(value)
	var s string
	switch reason.Cause {
	case explain.New:
		s = "new: the first record of " + what + " in the store"
	case explain.Observed:
		return "observed: the cache answered, nothing changed"
	case explain.NewHere:
		s = "new here — another instance: the first record of " + what + " on this instance, which has a cache of its own; " +
			prev + " did it on another"
		if len(reason.Differences) > 0 {
			s += " (" + formatDifferences(reason.Differences) + ")"
		}
	case explain.Raced:
		s = fmt.Sprintf("raced: %d requests computed %s at once; %s was still running", reason.AtOnce, what, prev)
	case explain.Inputs:
		s = "inputs differ from " + prev + ": " + formatDifferences(reason.Differences)
	case explain.Environment:
		s = "environment differs from " + prev + ": " + formatDifferences(reason.Differences)
	case explain.Forgotten:
		s = "forgotten: the same inputs and environment as " + prev + ", done again: the cache lost it"
	default:
		s = string(reason.Cause)
	}
	if reason.Verdict == explain.Miss {
		s += "; " + sayMissed(reason.Inside)
	}
	return s
}

// sayMissed says what a miss did inside: the first record that changed.
func sayMissed(in *sessions.KindRecord) string {
	if in == nil {
		return "missed: a record inside changed"
	}
	what := orDash(in.Record.Name)
	if key := keyAttributes(in.Record.Attributes); len(key) > 0 {
		what += " " + formatAttrs(key)
	}
	return fmt.Sprintf("missed: %s inside changed (%s seq %d)", what, formatString(in.Kind), in.Stamp.Seq)
}

// formatDifferences formats differences as "key: before → after", comma
// separated.
// sayOutcome says, of work done again with the same inputs, whether it
// came out as before: "" when it has no outcome attribute.
func sayOutcome(reason explain.Reason) string {
	if len(reason.Outcome) == 0 {
		return ""
	}
	if reason.OutcomeChanged() {
		var changed []explain.Difference
		for _, d := range reason.Outcome {
			if d.Before == nil || d.After == nil || !d.Before.Equal(*d.After) {
				changed = append(changed, d)
			}
		}
		return "; came out differently: " + formatDifferences(changed)
	}
	same := make(sessions.Attrs, len(reason.Outcome))
	for i, d := range reason.Outcome {
		same[i] = sessions.Attr{Key: d.Key, Value: *d.After}
	}
	return "; came out the same: " + formatAttrs(same)
}

func formatDifferences(diffs []explain.Difference) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = clean(d.Key) + ": " + formatSide(d.Before) + " → " + formatSide(d.After)
	}
	return strings.Join(parts, ", ")
}
