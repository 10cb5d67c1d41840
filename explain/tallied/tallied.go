// Package tallied reads the tallies of kept sessions (tallies.Tally) for
// the views that count work: what each session let go, summed by kind,
// name and key (as a view matches records) and by kind, and which
// sessions have no tally at all — kept by a writer that did not count
// what it let go, whose counts are of kept records only.
//
// Every record a tally counts is a hit (explain.Verdict): it changed
// nothing, and nothing inside it did.
package tallied

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// A Sum is the tallies of some sessions added up.
type Sum struct {
	// Sessions is how many sessions were read, and Untallied how many of
	// them have no tally: their counts are of kept records only.
	Sessions, Untallied int
	// Over is how many distinct keys the tallies summed into their kind's
	// rest (tallies.Tally.Over).
	Over int64

	keyOf  func(sessions.Attrs) sessions.Attrs
	only   []string // the kinds summed; nil for every kind
	keys   map[string]*tallies.Entry
	kinds  map[string]*tallies.Entry
	tallys map[sessions.SessionID]tallies.Tally // with Read's PerSession
}

// New returns an empty sum whose entries are keyed by keyOf of their key
// attributes (the key attributes a view matches records by, among those a
// tally keeps: "key" and those ending in ".key"); nil keeps them whole.
func New(keyOf func(sessions.Attrs) sessions.Attrs) *Sum {
	return &Sum{keyOf: keyOf, keys: map[string]*tallies.Entry{}, kinds: map[string]*tallies.Entry{}}
}

// Read adds up the tallies of the sessions of r that opts select
// (Records.Sessions), the entries of kinds (every kind when nil), keyed
// by keyOf as New. With perSession it keeps each session's tally too
// (Session).
func Read(r *sessions.Records, keyOf func(sessions.Attrs) sessions.Attrs, kinds []string, perSession bool, opts ...sessions.ReadOption) (*Sum, error) {
	s := New(keyOf)
	s.only = kinds
	if perSession {
		s.tallys = map[sessions.SessionID]tallies.Tally{}
	}
	for row, err := range r.Sessions(opts...) {
		if err != nil {
			return nil, err
		}
		t, ok, err := tallies.Read(r, row.ID)
		if err != nil {
			return nil, err
		}
		s.Add(t, ok)
	}
	return s, nil
}

// Add adds one session's tally; ok false for a session with none.
func (s *Sum) Add(t tallies.Tally, ok bool) {
	s.Sessions++
	if !ok {
		s.Untallied++
		return
	}
	if s.tallys != nil {
		s.tallys[t.Session] = t
	}
	s.Over += t.Over
	for _, e := range t.Entries {
		if s.only != nil && !slices.Contains(s.only, e.Kind) {
			continue
		}
		k := e
		if s.keyOf != nil && !e.Rest {
			k.Key = s.keyOf(e.Key)
		}
		id := Identity(k.Kind, k.Name, k.Key, k.Rest)
		if s.keys[id] == nil {
			s.keys[id] = &tallies.Entry{Kind: k.Kind, Name: k.Name, Key: k.Key, Rest: k.Rest}
		}
		s.keys[id].Merge(e)
		if s.kinds[e.Kind] == nil {
			s.kinds[e.Kind] = &tallies.Entry{Kind: e.Kind, Rest: true}
		}
		s.kinds[e.Kind].Merge(e)
	}
}

// Identity returns what a sum tells entries apart by, as a map key: kind,
// name, key attributes and whether it is a kind's rest.
func Identity(kind, name string, key sessions.Attrs, rest bool) string {
	var b strings.Builder
	b.WriteString(kind)
	b.WriteByte(0)
	b.WriteString(name)
	b.WriteByte(0)
	if rest {
		b.WriteByte(1)
	}
	k, _ := key.MarshalCBOR() // attributes always encode
	b.Write(k)
	return b.String()
}

// A nil *Sum is a sum of no session.

// Of returns the sum of the records tallied under a kind, name and key
// (as New keyed them), zero when none was.
func (s *Sum) Of(kind, name string, key sessions.Attrs) tallies.Entry {
	if s != nil && s.keys[Identity(kind, name, key, false)] != nil {
		return *s.keys[Identity(kind, name, key, false)]
	}
	return tallies.Entry{Kind: kind, Name: name, Key: key}
}

// Kind returns the sum of the records tallied of a kind, every key and
// its rest, zero when none was.
func (s *Sum) Kind(kind string) tallies.Entry {
	if s != nil && s.kinds[kind] != nil {
		return *s.kinds[kind]
	}
	return tallies.Entry{Kind: kind, Rest: true}
}

// Entries returns the sums by kind, name and key, in tallies.Entry
// order: a kind's rest after its keys.
func (s *Sum) Entries() []tallies.Entry {
	if s == nil {
		return nil
	}
	out := make([]tallies.Entry, 0, len(s.keys))
	for _, e := range s.keys {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b tallies.Entry) int {
		return cmp.Compare(Identity(a.Kind, a.Name, a.Key, a.Rest), Identity(b.Kind, b.Name, b.Key, b.Rest))
	})
	return out
}

// Kinds returns the sums by kind, in kind order.
func (s *Sum) Kinds() []tallies.Entry {
	out := make([]tallies.Entry, 0, len(s.kinds))
	for _, e := range s.kinds {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b tallies.Entry) int { return cmp.Compare(a.Kind, b.Kind) })
	return out
}

// Session returns the tally of one session read, and false when it has
// none or Read did not keep it (perSession false).
func (s *Sum) Session(id sessions.SessionID) (tallies.Tally, bool) {
	t, ok := s.tallys[id]
	return t, ok
}

// Tallied reports whether any session read has a tally.
func (s *Sum) Tallied() bool { return s != nil && s.Untallied < s.Sessions }

// Rate is a share of hits among lookups: Hits of Hits + Misses, tallied
// hits among the hits.
type Rate struct {
	// Hits are the records that were hits, kept and tallied; Tallied how
	// many of them were tallied, TalliedWall their walls; Misses the
	// records that were not hits (work done, or a lookup that missed).
	Hits, Tallied, Misses int64
	TalliedWall           time.Duration
}

// Lookups is Hits + Misses.
func (r Rate) Lookups() int64 { return r.Hits + r.Misses }

// Share is Hits of Lookups, from 0 to 1; 0 of none.
func (r Rate) Share() float64 {
	if r.Lookups() == 0 {
		return 0
	}
	return float64(r.Hits) / float64(r.Lookups())
}

// KindRate is the hit rate of one kind's records.
type KindRate struct {
	Kind string
	Rate
}

// KindRates returns each kind's hit rate, in kind order, from its kept
// records' hits and misses (by kind) and what s tallied of it: the kinds
// with a hit, kept or tallied, only.
func KindRates(hits, misses map[string]int64, s *Sum) []KindRate {
	var out []KindRate
	kinds := map[string]bool{}
	for k := range hits {
		kinds[k] = true
	}
	if s != nil {
		for k := range s.kinds {
			kinds[k] = true
		}
	}
	for k := range kinds {
		var t tallies.Entry
		if s != nil {
			t = s.Kind(k)
		}
		r := Rate{Hits: hits[k] + t.Count, Tallied: t.Count, Misses: misses[k], TalliedWall: t.Wall}
		if r.Hits > 0 {
			out = append(out, KindRate{Kind: k, Rate: r})
		}
	}
	slices.SortFunc(out, func(a, b KindRate) int { return cmp.Compare(a.Kind, b.Kind) })
	return out
}
