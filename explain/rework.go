package explain

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain/internal/chunks"
	"github.com/otelrecords/otelrecords/explain/internal/keyhistory"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// Rework adds up, across sessions, work that may have been wasted: what
// records of each kind spent in their children (the candidates an
// autotune ran, of which one won), and which records were done again (a
// key tuned in one session and tuned again in the next).
//
// Whether a record changed anything (its effect) is read through Body
// (StoredBody when nil), and what it did is its Verdict: a hit only when
// it changed nothing and nothing inside it did. ChildWork.Unchanged is
// the time in children that were hits — candidates benchmarked and not
// kept — and is unknown (UnchangedKnown false) for records that do not
// store their effect. Why each record of a key (KeyWork) was done is
// Why's rule, counted: a hit is the work found done, never work redone;
// every other record (a miss — a lookup inside which the work was done —
// among them) is work, and is new (the first of its key, or the first on
// its instance: Begin says which instance a session ran as), raced
// (computed while the same session was still computing the key), or
// redone: done again on its instance, after it had done it (earlier in
// the session or in an earlier session added). A record whose effect is
// not known counts as work, as stores written before effects were kept
// cannot tell.
//
// Give it the records of each session in stamp order (Add), the sessions
// in the order of their ids, each after its row (Begin); a record of
// another session, or asking for the answers, counts the session read so
// far, its records in the order they started (as Why tells them), so
// that the count does not depend on the order a path stamped them in.
// The zero Rework is ready to use. It holds a few words per pair of
// parent and child kinds and per key and instance seen, and the tree of
// the session being read (a Node and two words per record).
type Rework struct {
	// Body reads a record's effect; nil means StoredBody.
	Body Body
	// Keys are the attributes that, with a record's kind and name, tell
	// one piece of work from another (a compile of one kernel from a
	// compile of the next); nil means "key" and those ending in ".key",
	// as Match.
	Keys []string

	adds     int // how many sessions were counted
	children map[[2]string]*childTally
	keys     map[string]*keyTally // by identity

	b    TreeBuilder
	open bool                  // b holds a session not yet counted
	ids  chunks.Chunked[int32] // each record's key in list, in the order added
	list []*keyTally

	names instances
	// row and inst are the session Begin was told of, and its instance.
	row  sessions.SessionID
	inst int32
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
	index int32  // in Rework.list
	seen  uint64 // 1 + the id of the session that last counted it
	h     keyhistory.History[struct{}]
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
	// Unchanged is the sum of the walls of the children that were hits
	// (changed nothing, and nothing inside them did), and
	// UnchangedChildren how many they were: work whose result was not
	// kept. UnchangedKnown says whether the effect of any child was
	// known; when not, Unchanged is 0 and means nothing.
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
	// Sessions is how many sessions recorded it, or tallied it.
	Sessions int
	// Wall is the sum of its records' walls.
	Wall time.Duration
	// Redos is how many of its records did the work again on their
	// instance (Why's Inputs, Environment or Forgotten: changed
	// something, missed, or do not say), after an earlier record of the
	// key there had: the same work done again; Redone is the sum of their
	// walls.
	Redos  int
	Redone time.Duration
	// Raced is how many of its records did the work while a record of
	// the key in the same session was still doing it (Why's Raced), and
	// RacedWall the sum of their walls: work done twice at once, not
	// counted in Redos.
	Raced     int
	RacedWall time.Duration
	// NewHere is how many of its records were the first of the key on
	// their instance, after another instance had done the work (Why's
	// NewHere): work of a cache of its own, neither new to the store nor
	// redone.
	NewHere int
	// Hits is how many of its records were hits (the work found done:
	// nothing changed, in them or inside them), and HitWall the sum of
	// their walls. A hit is never redone work.
	Hits    int
	HitWall time.Duration
	// Tallied is how many of Hits are tallied (Rework.Tally: let go, so
	// counted, not kept), TalliedWall their walls: in Records and Wall too.
	Tallied     int
	TalliedWall time.Duration
	// Misses is how many of its records were not hits: the work was not
	// found done, and was done — by the record (it changed something: a
	// lookup that filled the cache), inside it (a lookup inside which a
	// compute changed something: a Miss verdict), or it does not say.
	// Records is Hits plus Misses, as a cache counts its lookups; each
	// miss is also new, new here, raced or redone.
	Misses int
}

// Begin tells Rework the row of the session whose records Add is given
// next, for the instance it ran as (InstanceKeys), and counts the session
// read so far. Records of a session it was not told of are of a session
// without a row: on the instance of rows without InstanceKeys.
func (w *Rework) Begin(row sessions.Session) {
	w.count()
	w.row, w.inst = row.ID, w.names.id(instanceOf(&row))
}

// Add counts one record, given in stamp order with the rest of its
// session's. A record of another session than the one before counts that
// session first. The records' own values are not kept: their key and name
// are, once per key.
func (w *Rework) Add(kr sessions.KindRecord) error {
	if w.open && kr.Stamp.Session != w.b.t.ID {
		w.count()
	}
	w.b.Body = w.Body
	if err := w.b.Add(kr); err != nil {
		return err
	}
	w.open = true
	*w.ids.Add() = w.key(kr.Kind, kr.Record.Name, kr.Record.Attributes).index
	return nil
}

// key returns the tally of a kind, name and attributes' key, new if need be.
func (w *Rework) key(kind, name string, attrs sessions.Attrs) *keyTally {
	if w.keys == nil {
		w.children, w.keys = map[[2]string]*childTally{}, map[string]*keyTally{}
	}
	key := Match{Keys: w.Keys}.KeyOf(attrs)
	id := identity(kind, name, key)
	k := w.keys[id]
	if k == nil {
		k = &keyTally{KeyWork: KeyWork{Kind: strings.Clone(kind), Name: strings.Clone(name), Key: heldAttrs(key)}, index: int32(len(w.list))}
		w.keys[id] = k
		w.list = append(w.list, k)
	}
	return k
}

// Tally counts t, a session's tally (tallies.Tally), after its Begin: each
// entry's records as hits (not judged by instance) of its kind, name and
// key — among the entry's key attributes, those Keys names — and a kind's
// rest (keys past the tally's bound) under its kind alone, with no name.
func (w *Rework) Tally(t tallies.Tally) {
	if w.open && t.Session != w.b.t.ID {
		w.count() // the session read so far, first
	}
	for _, e := range t.Entries {
		k, n := w.key(e.Kind, e.Name, e.Key), int(e.Count)
		k.Records, k.Hits, k.Tallied = k.Records+n, k.Hits+n, k.Tallied+n
		k.Wall, k.HitWall, k.TalliedWall = addSat(k.Wall, e.Wall), addSat(k.HitWall, e.Wall), addSat(k.TalliedWall, e.Wall)
		if k.seen != uint64(t.Session)+1 {
			k.seen = uint64(t.Session) + 1
			k.Sessions++
		}
	}
}

// count counts the session read so far.
func (w *Rework) count() {
	if !w.open {
		return
	}
	t := w.b.Tree()
	ids := w.ids
	inst := w.names.id(instanceOf(nil))
	if w.row == t.ID {
		inst = w.inst
	}
	w.open, w.ids = false, chunks.Chunked[int32]{}
	w.adds++
	for _, i := range startOrder(t) {
		n := t.nodes.At(i)
		wall := max(n.Wall, 0)
		k := w.list[*ids.At(i)]
		v := n.Verdict()
		if v.IsWork() {
			k.Misses++
		}
		switch k.h.Judge(inst, uint64(t.ID), n.Offset, n.Wall, v == Hit, struct{}{}).Cause {
		case keyhistory.Hit:
			k.Hits++
			k.HitWall = addSat(k.HitWall, wall)
		case keyhistory.NewHere:
			k.NewHere++
		case keyhistory.Raced:
			k.Raced++
			k.RacedWall = addSat(k.RacedWall, wall)
		case keyhistory.Again:
			k.Redos++
			k.Redone = addSat(k.Redone, wall)
		}
		k.Records++
		k.Wall = addSat(k.Wall, wall)
		if k.seen != uint64(t.ID)+1 {
			k.seen = uint64(t.ID) + 1
			k.Sessions++
		}

		// A record's children, together, so that a marker counts each
		// parent once per pair of kinds.
		for j := n.first; j >= 0; j = t.nodes.At(j).next {
			child := t.nodes.At(j)
			pair := [2]string{t.Kind(n), t.Kind(child)}
			c := w.children[pair]
			if c == nil {
				c = &childTally{ChildWork: ChildWork{Parent: pair[0], Child: pair[1]}}
				w.children[pair] = c
			}
			c.Children++
			c.Wall = addSat(c.Wall, max(child.Wall, 0))
			if v := child.Verdict(); v != Unknown {
				c.UnchangedKnown = true
				if v == Hit {
					c.UnchangedChildren++
					c.Unchanged = addSat(c.Unchanged, max(child.Wall, 0))
				}
			}
			if c.add != w.adds || c.parent != i {
				c.add, c.parent = w.adds, i
				c.Parents++
			}
		}
	}
}

// startOrder returns the positions of t's records in the order they
// started (offset, then seq), the order keyhistory judges them in: a
// gateway stamps concurrent requests in the order their traces came, not
// the order they started.
func startOrder(t *SessionTree) []int32 {
	order := make([]int32, t.nodes.Len())
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Or(cmp.Compare(t.nodes.At(a).Offset, t.nodes.At(b).Offset), cmp.Compare(a, b))
	})
	return order
}

// Children returns the work done in children, per parent kind and child
// kind, the most wall first.
func (w *Rework) Children() []ChildWork {
	w.count()
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
	w.count()
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
