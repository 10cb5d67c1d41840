package api

import (
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// HitRate is how often a key hit on each side of a diff, as records diff
// --json prints it: its kept and tallied hits together (FORMAT.md §8).
type HitRate struct {
	HitRate string         `json:"hit_rate"` // "key", or "rest" for a kind's rest
	Kind    string         `json:"kind"`
	Name    string         `json:"name"`
	Key     sessions.Attrs `json:"key"`
	A       HitSide        `json:"a"`
	B       HitSide        `json:"b"`
}

// HitSide is what one side did of a key: looked_up false when it kept no
// record and tallied none of it.
type HitSide struct {
	LookedUp    bool  `json:"looked_up"`
	Hits        int64 `json:"hits"`
	Tallied     int64 `json:"tallied"`
	Misses      int64 `json:"misses"`
	TalliedNs   int64 `json:"tallied_ns"`
	MedianHitNs int64 `json:"median_hit_ns"`
	MeanHitNs   int64 `json:"mean_hit_ns"`
}

func hitSide(s summary.HitSide) HitSide {
	return HitSide{s.LookedUp(), s.Hits, s.Tallied, s.Misses, int64(s.TalliedWall), int64(s.Hit.Quantile(0.5)), int64(s.Hit.Mean())}
}

// NewHitRate returns how often a key hit on each side.
func NewHitRate(k summary.KeyHits) HitRate {
	j := HitRate{"key", k.Kind, k.Name, k.Key, hitSide(k.A), hitSide(k.B)}
	if k.Rest {
		j.HitRate = "rest"
	}
	if j.Key == nil {
		j.Key = sessions.Attrs{}
	}
	return j
}

// Tally is how many sessions a view read keep a tally (FORMAT.md §8):
// those without one (untallied) were kept by a writer that did not count
// what it let go, and their hits are of kept records only; over is how
// many keys the tallies counted under their kind alone.
type Tally struct {
	Sessions  int   `json:"sessions"`
	Untallied int   `json:"untallied"`
	Over      int64 `json:"over"`
}

// NewTally returns how many of the sessions s read keep a tally.
func NewTally(s *tallied.Sum) Tally { return Tally{s.Sessions, s.Untallied, s.Over} }

// DiffTallies is the last line of records diff --json: how many sessions
// of each side keep a tally; tallies is always "sessions".
type DiffTallies struct {
	Tallies string `json:"tallies"`
	A       Tally  `json:"a"`
	B       Tally  `json:"b"`
}

// NewDiffTallies returns how many sessions of each side keep a tally.
func NewDiffTallies(a, b *tallied.Sum) DiffTallies {
	return DiffTallies{"sessions", NewTally(a), NewTally(b)}
}

// WhyTally is what records why --json prints of a session's tally of the
// key asked about: its records let go, counted, not kept — all hits.
type WhyTally struct {
	Session  sessions.SessionID `json:"session,string"`
	Kind     string             `json:"kind"`
	Name     string             `json:"name"`
	Key      sessions.Attrs     `json:"key"`
	Tallied  int64              `json:"tallied"`
	WallNs   int64              `json:"wall_ns"`
	MinNs    int64              `json:"min_ns"`
	MaxNs    int64              `json:"max_ns"`
	MedianNs int64              `json:"median_ns"`
	MeanNs   int64              `json:"mean_ns"`
	Outcomes map[string]int64   `json:"outcomes"`
}

// NewWhyTally returns a session's tally of a key.
func NewWhyTally(id sessions.SessionID, e tallies.Entry) WhyTally {
	j := WhyTally{id, e.Kind, e.Name, e.Key, e.Count, int64(e.Wall), int64(e.Min), int64(e.Max), int64(e.Quantile(0.5)), int64(e.Mean()), e.Outcomes}
	if j.Key == nil {
		j.Key = sessions.Attrs{}
	}
	if j.Outcomes == nil {
		j.Outcomes = map[string]int64{}
	}
	return j
}
