package api

import (
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// DiffKey is a match of two sides as records diff --json prints it.
type DiffKey struct {
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
	A           DiffSide       `json:"a"`
	B           DiffSide       `json:"b"`
	Differences []AttrDiff     `json:"differences"`
	// TalliedA and TalliedB are the hits each side tallied of the key
	// (let go, counted, not kept), whatever the match's verdict.
	TalliedA int64 `json:"tallied_a"`
	TalliedB int64 `json:"tallied_b"`
}

// DiffSide is what one side holds of a match: wall_ns is its records'
// median; count 0, attributes {} and wall_ns 0 when it holds nothing.
type DiffSide struct {
	Count      int            `json:"count"`
	Attributes sessions.Attrs `json:"attributes"`
	WallNs     int64          `json:"wall_ns"`
}

// AttrDiff is an attribute the two sides differ in: a value, or null
// where that side has none.
type AttrDiff struct {
	Key string          `json:"key"`
	A   *sessions.Value `json:"a"`
	B   *sessions.Value `json:"b"`
}

func diffSide(e *explain.Entry) DiffSide {
	if e == nil {
		return DiffSide{Attributes: sessions.Attrs{}}
	}
	return DiffSide{Count: e.Count, Attributes: e.Attributes, WallNs: int64(e.Median)}
}

func total(e *explain.Entry) int64 {
	if e == nil {
		return 0
	}
	return int64(e.Total)
}

// NewDiffKey returns a match of the two sides.
func NewDiffKey(k explain.KeyDiff) DiffKey {
	e := k.Entry()
	a, b := diffSide(k.A), diffSide(k.B)
	d := DiffKey{
		Change:      k.Change,
		Kind:        e.Kind,
		Name:        e.Name,
		Key:         e.Key,
		Effect:      nullable(e.Effect),
		Verdict:     Verdict(e.Verdict),
		CountA:      a.Count,
		CountB:      b.Count,
		MedianANs:   a.WallNs,
		MedianBNs:   b.WallNs,
		TotalANs:    total(k.A),
		TotalBNs:    total(k.B),
		A:           a,
		B:           b,
		Differences: make([]AttrDiff, len(k.Differences)),
	}
	for i, ad := range k.Differences {
		d.Differences[i] = AttrDiff{ad.Key, ad.Before, ad.After}
	}
	return d
}

// nullable returns s, or nil for "": a JSON null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// DiffTotal is a time of both sides as records diff --json prints it:
// their duration, or a kind's time.
type DiffTotal struct {
	Total string `json:"total"` // "duration" or "kind"
	Kind  string `json:"kind"`
	A     Wall   `json:"a"`
	B     Wall   `json:"b"`
}

// Wall is a time.
type Wall struct {
	WallNs int64 `json:"wall_ns"`
}

// NewDiffTotals returns the times of a comparison: its duration, then
// each kind's.
func NewDiffTotals(c explain.Comparison) []DiffTotal {
	var out []DiffTotal
	for _, t := range append([]explain.Total{c.Duration}, c.Kinds...) {
		j := DiffTotal{Total: "kind", Kind: t.Kind, A: Wall{int64(t.A)}, B: Wall{int64(t.B)}}
		if t.Kind == "" {
			j.Total = "duration"
		}
		out = append(out, j)
	}
	return out
}

// LeftOut is the attributes a diff left out by default.
type LeftOut struct {
	LeftOut []string `json:"left_out"`
}

// Why is a record as records why --json prints it: why it was done.
type Why struct {
	Session     sessions.SessionID `json:"session,string"`
	Seq         uint64             `json:"seq"`
	Kind        string             `json:"kind"`
	Name        string             `json:"name"`
	WallNs      int64              `json:"wall_ns"`
	Effect      *string            `json:"effect"`
	Verdict     *string            `json:"verdict"`
	Reason      explain.Cause      `json:"reason"`
	Inside      *Inside            `json:"inside"`
	Previous    *Stamp             `json:"previous"`
	AtOnce      int                `json:"at_once"`
	Differences []Difference       `json:"differences"`
	Outcome     []Difference       `json:"outcome"`
	Changed     bool               `json:"outcome_changed"`
}

// Inside is, of a miss, the first record inside it that changed
// something.
type Inside struct {
	Seq  uint64         `json:"seq"`
	Kind string         `json:"kind"`
	Name string         `json:"name"`
	Key  sessions.Attrs `json:"key"`
}

// Stamp names a record: its session and seq.
type Stamp struct {
	Session sessions.SessionID `json:"session,string"`
	Seq     uint64             `json:"seq"`
}

// Difference is an attribute that differs from the record compared with:
// a value, or null where that side has none.
type Difference struct {
	Key    string          `json:"key"`
	Before *sessions.Value `json:"before"`
	After  *sessions.Value `json:"after"`
}

// NewWhy returns why a record was done.
func NewWhy(reason explain.Reason) Why {
	j := Why{
		Session:     reason.Stamp.Session,
		Seq:         reason.Stamp.Seq,
		Kind:        reason.Kind,
		Name:        reason.Record.Name,
		WallNs:      int64(reason.Record.Wall),
		Effect:      Effect(&reason.Record),
		Verdict:     Verdict(reason.Verdict),
		Reason:      reason.Cause,
		AtOnce:      reason.AtOnce,
		Differences: make([]Difference, len(reason.Differences)),
		Outcome:     make([]Difference, len(reason.Outcome)),
		Changed:     reason.OutcomeChanged(),
	}
	for i, d := range reason.Outcome {
		j.Outcome[i] = Difference{d.Key, d.Before, d.After}
	}
	if in := reason.Inside; in != nil {
		j.Inside = &Inside{in.Stamp.Seq, in.Kind, in.Record.Name, explain.Match{}.KeyOf(in.Record.Attributes)}
		if j.Inside.Key == nil {
			j.Inside.Key = sessions.Attrs{}
		}
	}
	if reason.HasPrevious {
		j.Previous = &Stamp{reason.Previous.Session, reason.Previous.Seq}
	}
	for i, d := range reason.Differences {
		j.Differences[i] = Difference{d.Key, d.Before, d.After}
	}
	return j
}
