package explain

import (
	"cmp"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// Rework adds up, across sessions, work that may have been wasted: what
// records of each kind spent in their children (the candidates an
// autotune ran, of which one won), and which records were done again (a
// key tuned in one session and tuned again in the next).
//
// Whether a record changed anything (its effect) is read through Body
// (StoredBody when nil). ChildWork.Unchanged is the time in children
// known to have changed nothing — candidates benchmarked and not kept —
// and is unknown (UnchangedKnown false) for records that do not store
// their effect. A record of a key (KeyWork) that changed nothing is a
// hit: the work found done, never work redone. Work is redone when a key
// that had already changed something (earlier in the session or in an
// earlier session added) changes something again; a record whose effect
// is not known counts as work, as stores written before effects were
// kept cannot tell.
//
// The zero Rework is ready to use. It holds a few words per pair of
// parent and child kinds, and per key seen.
type Rework struct {
	// Body reads a record's effect; nil means StoredBody.
	Body Body
	// Keys are the attributes that, with a record's kind and name, tell
	// one piece of work from another (a compile of one kernel from a
	// compile of the next); nil means "key" and those ending in ".key",
	// as Match.
	Keys []string

	adds     int // how many trees were added
	children map[[2]string]*childTally
	keys     map[string]*keyTally // by identity
}

// childTally is a ChildWork, and the parent (in which Add) that last
// counted it, so each parent counts once.
type childTally struct {
	ChildWork
	add    int
	parent int32
}

// keyTally is a KeyWork, and the Add that last counted it, so each
// session counts once.
type keyTally struct {
	KeyWork
	add  int
	done bool // a record of the key changed something
}

// ChildWork is what the records of one kind spent in their children of
// one kind.
type ChildWork struct {
	// Parent is the kind of the records the children hang under.
	Parent string
	// Child is the children's kind.
	Child string
	// Parents is how many records of the parent kind had children of
	// this kind.
	Parents int
	// Children is how many children of this kind they had.
	Children int
	// Wall is the sum of the children's walls: the work done in them,
	// concurrent children each counted.
	Wall time.Duration
	// Unchanged is the sum of the walls of the children known to have
	// changed nothing (Observed), and UnchangedChildren how many they
	// were: work whose result was not kept. UnchangedKnown says whether
	// the effect of any child was known; when not, Unchanged is 0 and
	// means nothing.
	Unchanged         time.Duration
	UnchangedChildren int
	UnchangedKnown    bool
}

// KeyWork is how often one piece of work — a kind, a name and key
// attributes, such as an autotune key — was recorded, done and found
// done.
type KeyWork struct {
	// Kind is the record's kind.
	Kind string
	// Name is the record's name within its kind.
	Name string
	// Key are its key attributes (Rework.Keys), in the first record's
	// order; nil when it has none.
	Key sessions.Attrs
	// Records is how many times it was recorded, work and hits.
	Records int
	// Sessions is how many sessions recorded it.
	Sessions int
	// Wall is the sum of its records' walls.
	Wall time.Duration
	// Redos is how many of its records changed something again, after
	// an earlier record of the key had (or whose effect is not known):
	// the same work done again; Redone is the sum of their walls.
	Redos  int
	Redone time.Duration
	// Hits is how many of its records changed nothing (a cache hit: the
	// work found done), and HitWall the sum of their walls. A hit is
	// never redone work.
	Hits    int
	HitWall time.Duration
}

// Add counts one session's tree.
func (w *Rework) Add(t *SessionTree) {
	if w.children == nil {
		w.children = map[[2]string]*childTally{}
		w.keys = map[string]*keyTally{}
	}
	m := Match{Keys: w.Keys}
	w.adds++
	body := w.Body
	if body == nil {
		body = StoredBody
	}
	for i := range int32(t.nodes.n) {
		n := t.nodes.at(i)
		wall := max(n.Record.Wall, 0)

		key := m.keyOf(n.Record.Attributes)
		id := identity(n.Kind, n.Record.Name, key)
		k := w.keys[id]
		if k == nil {
			k = &keyTally{KeyWork: KeyWork{Kind: n.Kind, Name: n.Record.Name, Key: key}}
			w.keys[id] = k
		}
		switch effect, known := body.Effect(&n.Record); {
		case known && effect == sessions.Observed:
			k.Hits++
			k.HitWall = addSat(k.HitWall, wall)
		case k.done:
			k.Redos++
			k.Redone = addSat(k.Redone, wall)
		default:
			k.done = true
		}
		k.Records++
		k.Wall = addSat(k.Wall, wall)
		if k.add != w.adds {
			k.add = w.adds
			k.Sessions++
		}

		// A record's children, together, so that a marker counts each
		// parent once per pair of kinds.
		for j := n.first; j >= 0; j = t.nodes.at(j).next {
			child := t.nodes.at(j)
			pair := [2]string{n.Kind, child.Kind}
			c := w.children[pair]
			if c == nil {
				c = &childTally{ChildWork: ChildWork{Parent: n.Kind, Child: child.Kind}}
				w.children[pair] = c
			}
			c.Children++
			c.Wall = addSat(c.Wall, max(child.Record.Wall, 0))
			if effect, known := body.Effect(&child.Record); known {
				c.UnchangedKnown = true
				if effect == sessions.Observed {
					c.UnchangedChildren++
					c.Unchanged = addSat(c.Unchanged, max(child.Record.Wall, 0))
				}
			}
			if c.add != w.adds || c.parent != i {
				c.add, c.parent = w.adds, i
				c.Parents++
			}
		}
	}
}

// Children returns the work done in children, per parent kind and child
// kind, the most wall first.
func (w *Rework) Children() []ChildWork {
	out := make([]ChildWork, 0, len(w.children))
	for _, c := range w.children {
		out = append(out, c.ChildWork)
	}
	slices.SortFunc(out, func(a, b ChildWork) int {
		if c := cmp.Compare(b.Wall, a.Wall); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Parent, b.Parent); c != 0 {
			return c
		}
		return cmp.Compare(a.Child, b.Child)
	})
	return out
}

// Redone returns the keys recorded more than once (work redone, or found
// done), the most time redone first, then the most wall.
func (w *Rework) Redone() []KeyWork {
	var out []KeyWork
	for _, k := range w.keys {
		if k.Records > 1 {
			out = append(out, k.KeyWork)
		}
	}
	slices.SortFunc(out, func(a, b KeyWork) int {
		return cmp.Or(
			cmp.Compare(b.Redone, a.Redone),
			cmp.Compare(b.Wall, a.Wall),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(identity(a.Kind, a.Name, a.Key), identity(b.Kind, b.Name, b.Key)),
		)
	})
	return out
}
