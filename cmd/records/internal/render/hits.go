package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/tallies"
)

// bothHit starts the words of a match one side kept hits of and the other
// only tallied: no difference.
const bothHit = "hit on both sides"

// Absent says why a diff's entry e is on one side only, from what the
// other side (named name) recorded and tallied of its key: it only hit it
// (every hit tallied, none kept), did not look it up (no record and no
// tally of it), or recorded it otherwise, or keeps no tally (was, the
// plain words).
func Absent(c explain.Comparison, e *explain.Entry, other DiffSide, name, was string) string {
	if other.Tally == nil {
		return was
	}
	t := other.Tally.Of(e.Kind, e.Name, e.Key)
	switch {
	case t.Count > 0 && e.Verdict == explain.Hit:
		return fmt.Sprintf("%s: %s's %s tallied, not kept", bothHit, name, Plural(int(t.Count), "hit"))
	case t.Count > 0:
		return fmt.Sprintf("%s only hit it: %s, tallied (let go, not kept)", name, Plural(int(t.Count), "hit"))
	case recordedOn(c, e, name == "A"), !other.Tally.Tallied():
		return was // a side without tallies: the note below the table says so
	}
	return "not done or looked up in " + name + " (no record, no tally)"
}

// recordedOn reports whether side A (onA) or B recorded e's key, with
// any verdict.
func recordedOn(c explain.Comparison, e *explain.Entry, onA bool) bool {
	id := tallied.Identity(e.Kind, e.Name, e.Key, false)
	for _, k := range c.Keys {
		s := k.B
		if onA {
			s = k.A
		}
		if s != nil && tallied.Identity(s.Kind, s.Name, s.Key, false) == id {
			return true
		}
	}
	return false
}

// DiffHits writes how often each key hit on either side, kept and tallied
// hits together: "12/13 92%" is 12 hits of 13 lookups (hits and misses),
// and how long the hits took, the median (from the tallies' histograms)
// and the mean. Nothing when no key hit.
func DiffHits(out io.Writer, rows []summary.KeyHits) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nHits, kept and tallied (let go, counted, not kept): hits/lookups, and how long a hit took")
	t := NewTable(out)
	if err := t.Row("KIND", "RECORD", "HITS A", "HITS B", "MEDIAN HIT A", "MEDIAN HIT B", "MEAN HIT A", "MEAN HIT B", "MEAN B VS A"); err != nil {
		return err
	}
	for _, r := range rows {
		if err := t.Row(r.Kind, HitName(r), HitRate(r.A), HitRate(r.B), HitTime(r.A, r.A.Hit.Quantile(0.5)), HitTime(r.B, r.B.Hit.Quantile(0.5)),
			HitTime(r.A, r.A.Hit.Mean()), HitTime(r.B, r.B.Hit.Mean()), Change(r.A.Hit.Mean(), r.B.Hit.Mean())); err != nil {
			return err
		}
	}
	return t.Flush()
}

// HitName names a key of a diff's hits: its record's name and key
// attributes, or what a kind's rest is.
func HitName(r summary.KeyHits) string {
	switch {
	case r.Rest:
		return "(the rest of the kind's keys)"
	case len(r.Key) > 0:
		return OrDash(r.Name) + " " + Attrs(r.Key)
	}
	return OrDash(r.Name)
}

// HitRate says how often a side hit a key: "12/13 92%, 12 tallied", or
// "not looked up".
func HitRate(s summary.HitSide) string {
	if !s.LookedUp() {
		return "not looked up"
	}
	out := strconv.FormatInt(s.Hits, 10) + "/" + strconv.FormatInt(s.Lookups(), 10) + " " + strconv.Itoa(int(100*s.Share()+0.5)) + "%"
	if s.Tallied > 0 {
		out += ", " + strconv.FormatInt(s.Tallied, 10) + " tallied"
	}
	return out
}

// HitTime formats d, a time of a side's hits, "-" when it has none.
func HitTime(s summary.HitSide, d time.Duration) string {
	if s.Hits == 0 {
		return "-"
	}
	return Duration(d)
}

// TallyEntry says how a tallied key's records went: "hit 389 times, let
// go (tallied): median 1.0µs, mean 1.2µs, 800ns to 3.1µs", then, when
// the records had an outcome attribute, its values counted ("; results:
// hit=388 miss=1"): every tallied record is a hit, as changing nothing,
// but a program that says a lookup missed finds its own counts here, as
// why --json gives them.
func TallyEntry(e tallies.Entry) string {
	out := fmt.Sprintf("hit %s, let go (tallied): median %s, mean %s, %s to %s", Plural(int(e.Count), "time"),
		Duration(e.Quantile(0.5)), Duration(e.Mean()), Duration(e.Min), Duration(e.Max))
	if len(e.Outcomes) == 0 {
		return out
	}
	out += "; results:"
	for _, v := range slices.Sorted(maps.Keys(e.Outcomes)) {
		out += " " + String(v) + "=" + strconv.FormatInt(e.Outcomes[v], 10)
	}
	return out
}
