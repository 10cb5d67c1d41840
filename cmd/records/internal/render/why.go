package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// Why says why a record was done, in words, as records why prints it:
// its cause, what a miss did inside, and how work done again came out.
func Why(reason explain.Reason, key, value string) string {
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
	what := String(key) + "=" + String(value)
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
	what := OrDash(in.Record.Name)
	if key := (explain.Match{}).KeyOf(in.Record.Attributes); len(key) > 0 {
		what += " " + Attrs(key)
	}
	return fmt.Sprintf("missed: %s inside changed (%s seq %d)", what, String(in.Kind), in.Stamp.Seq)
}

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
	return "; came out the same: " + Attrs(same)
}

// formatDifferences formats differences as "key: before → after", comma
// separated.
func formatDifferences(diffs []explain.Difference) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = Clean(d.Key) + ": " + side(d.Before) + " → " + side(d.After)
	}
	return strings.Join(parts, ", ")
}
