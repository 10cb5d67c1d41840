package summary

import (
	"cmp"
	"slices"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// KeyHits is how often one key (a kind, name and key attributes) hit on
// each side of a diff, its kept records and its tallied ones together.
type KeyHits struct {
	Kind, Name string
	Key        sessions.Attrs
	// Rest marks a kind's rest: keys a tally no longer told apart.
	Rest bool
	A, B HitSide
}

// HitSide is what one side of a diff did of a key.
type HitSide struct {
	// Rate counts its hits, kept and tallied, and its misses.
	tallied.Rate
	// Hit are the durations of its hits: the tallied ones as their tally
	// counted them, each kept hit as if it took its records' median
	// (explain.Entry keeps no more): Hit.Quantile(0.5) is the median hit,
	// Hit.Mean() the mean.
	Hit tallies.Entry
	// Recorded says whether the side kept any record of the key.
	Recorded bool
}

// LookedUp reports whether the side did the key at all: kept a record of
// it or tallied one.
func (s HitSide) LookedUp() bool { return s.Lookups() > 0 }

// Hits returns how often each key of a diff hit on either side, the
// keys with a hit on one side at least (kept or tallied), in the
// comparison's order (kind, name, key), a kind's rest after its keys. a and
// b are the sides' tallies, keyed as c matched records; nil for a side
// whose tallies were not read.
func Hits(c explain.Comparison, a, b *tallied.Sum) []KeyHits {
	rows := map[string]*KeyHits{}
	row := func(kind, name string, key sessions.Attrs, rest bool) *KeyHits {
		id := tallied.Identity(kind, name, key, rest)
		if rows[id] == nil {
			rows[id] = &KeyHits{Kind: kind, Name: name, Key: key, Rest: rest}
		}
		return rows[id]
	}
	kept := func(s *HitSide, e *explain.Entry) {
		if e == nil {
			return
		}
		s.Recorded = true
		if e.Verdict != explain.Hit {
			s.Misses += int64(e.Count)
			return
		}
		s.Hits += int64(e.Count)
		b := tallies.Bucket(e.Median)
		hist := make([]int64, b+1)
		hist[b] = int64(e.Count)
		s.Hit.Merge(tallies.Entry{Count: int64(e.Count), Wall: e.Total, Min: e.Median, Max: e.Median, Hist: hist})
	}
	for _, k := range c.Keys {
		e := k.Entry()
		r := row(e.Kind, e.Name, e.Key, false)
		kept(&r.A, k.A)
		kept(&r.B, k.B)
	}
	for i, sum := range []*tallied.Sum{a, b} {
		if sum == nil {
			continue
		}
		for _, e := range sum.Entries() {
			r := row(e.Kind, e.Name, e.Key, e.Rest)
			s := &r.A
			if i == 1 {
				s = &r.B
			}
			s.Hits += e.Count
			s.Tallied += e.Count
			s.TalliedWall += e.Wall
			s.Hit.Merge(e)
		}
	}
	var out []KeyHits
	for _, r := range rows {
		if r.A.Hits > 0 || r.B.Hits > 0 {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(x, y KeyHits) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name),
			cmp.Compare(tallied.Identity(x.Kind, x.Name, x.Key, x.Rest), tallied.Identity(y.Kind, y.Name, y.Key, y.Rest)))
	})
	return out
}
