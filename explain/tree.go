package explain

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"

	"github.com/otelrecords/otelrecords/sessions"
)

// Node is a record in its session's tree: the record, its kind, and where
// it hangs.
type Node struct {
	sessions.KindRecord
	// Depth is how many records this one lies inside: 0 for a root.
	Depth int
	// ParentSeq is the seq of the record this one hangs under. It means
	// nothing for a root (Depth 0): seq 0 is a record like any other.
	ParentSeq uint64

	// Positions in the order the session's records were placed, -1 for
	// none: the node's own, and (in a SessionTree) its parent's, first
	// and last child's, and next sibling's. Children are a linked list,
	// not a slice per node, so a tree costs the same per record whatever
	// its shape.
	index, parent, first, last, next int32
}

// spanKey names a span: span ids are unique within their trace.
type spanKey struct {
	trace sessions.TraceID
	span  sessions.SpanID
}

// placed is what a later record needs of a span's record to hang under
// it.
type placed struct {
	seq   uint64
	depth int32
	index int32
}

// Nesting places the records of a session, given in stamp order, in the
// session's tree as they come: each record's depth and parent are known
// when it arrives, so a program can walk a session once, holding a few
// words per span rather than the records.
//
// A record hangs under the record of its parent span (its ParentSpanID
// with its TraceID) when that record came before it in the session; else
// it is a root. Spans are stamped when they start, so a parent, open when
// its child started, always has the lower seq; a store that says
// otherwise is damaged, and the record shows as a root rather than closing
// a cycle. Records without a span id (written by code, not spans) are
// roots, and nothing hangs under them. Should two records carry one span
// id, the first is the span's record.
//
// The zero Nesting is ready to use. A record of a session other than the
// last one placed starts the next session afresh, so one Nesting can place
// a read of many sessions in stamp order.
type Nesting struct {
	session sessions.SessionID
	started bool
	n       int32 // how many records of the session were placed
	spans   map[spanKey]placed
}

// Place returns the node of the next record of the session: the record
// with its depth and its parent's seq.
func (ns *Nesting) Place(kr sessions.KindRecord) Node {
	n := Node{KindRecord: kr}
	ns.place(&n)
	return n
}

// place places the record n holds, in place: nodes are large, and a tree
// of a million is built without copying each one more than it must.
func (ns *Nesting) place(n *Node) {
	if !ns.started || n.Stamp.Session != ns.session {
		ns.started, ns.session, ns.n = true, n.Stamp.Session, 0
		clear(ns.spans)
	}
	n.index, n.parent, n.first, n.last, n.next = ns.n, -1, -1, -1, -1
	n.Depth, n.ParentSeq = 0, 0
	if ns.n == math.MaxInt32 {
		// Positions are int32 to keep a node small; no session this
		// large fits in memory anyway, but a stream may still pass by.
		return
	}
	ns.n++
	rec := &n.Record
	if !rec.ParentSpanID.IsZero() {
		if p, ok := ns.spans[spanKey{rec.TraceID, rec.ParentSpanID}]; ok {
			n.Depth, n.ParentSeq, n.parent = int(p.depth)+1, p.seq, p.index
		}
	}
	if !rec.SpanID.IsZero() {
		if ns.spans == nil {
			ns.spans = make(map[spanKey]placed)
		}
		k := spanKey{rec.TraceID, rec.SpanID}
		if _, dup := ns.spans[k]; !dup {
			ns.spans[k] = placed{n.Stamp.Seq, int32(n.Depth), n.index}
		}
	}
}

// Nest yields records given in stamp order (as InStampOrder yields them)
// as nodes of their session's tree, in the same order: each with its depth
// and its parent's seq, placed as Nesting places them. It holds a few
// words per span, never a record. An error from records ends the sequence
// with that error.
func Nest(records iter.Seq2[sessions.KindRecord, error]) iter.Seq2[Node, error] {
	return func(yield func(Node, error) bool) {
		var ns Nesting
		for kr, err := range records {
			if err != nil {
				yield(Node{}, err)
				return
			}
			if !yield(ns.Place(kr), nil) {
				return
			}
		}
	}
}

// SessionTree is a session's records as a tree, nested by parent span id
// as Nesting nests them: the roots in stamp order, and under each record
// its children in stamp order. It is built in one pass over the records,
// in time and memory proportional to their number, whatever the shape.
// A SessionTree is not modified once built, and is safe for concurrent
// reads.
type SessionTree struct {
	// ID is the session's id.
	ID sessions.SessionID

	nodes       chunks // in the order the records came: stamp order
	first, last int32  // the first and last root
	bySeq       map[uint64]int32
}

// chunkSize is how many nodes a chunk of a tree holds, past the first
// (which grows by doubling, so a small session costs little).
const chunkSize = 1 << 10

// chunks holds a tree's nodes in fixed-size arrays rather than one
// growing slice: growing a slice of a million nodes copies them again and
// again (Go grows large slices by a quarter), allocating five times what
// it keeps; chunks allocate what they keep, and once the first is full
// never move a node.
type chunks struct {
	c [][]Node
	n int
}

func (c *chunks) at(i int32) *Node { return &c.c[i/chunkSize][i%chunkSize] }

// add returns a new node at the end, zero.
func (c *chunks) add() *Node {
	if len(c.c) == 0 || len(c.c[len(c.c)-1]) == chunkSize {
		c.c = append(c.c, nil)
	}
	last := &c.c[len(c.c)-1]
	if len(*last) == cap(*last) && len(c.c) == 1 {
		*last = slices.Grow(*last, min(max(2*len(*last), 8), chunkSize)-len(*last))
	} else if cap(*last) == 0 {
		*last = make([]Node, 0, chunkSize)
	}
	*last = (*last)[:len(*last)+1]
	c.n++
	return &(*last)[len(*last)-1]
}

// ErrTooManyRecords is returned by BuildTree and Tree for a session of
// more than math.MaxInt32 records.
var ErrTooManyRecords = errors.New("explain: too many records in one session")

// Tree reads a session from the store and builds its tree. A session with
// no records gives an empty tree. It lists the store's kinds first; a
// caller building the trees of many sessions lists them once, and calls
// BuildTree(InStampOrder(r, id, kinds)) for each.
func Tree(r *sessions.Records, id sessions.SessionID) (*SessionTree, error) {
	t, err := BuildTree(InStampOrder(r, id, nil))
	if err != nil {
		return nil, err
	}
	t.ID = id
	return t, nil
}

// BuildTree builds the tree of the records of one session, given in stamp
// order (as InStampOrder yields them). Its ID is the records' session.
// Records of more than one session are an error, as is an error from
// records.
func BuildTree(records iter.Seq2[sessions.KindRecord, error]) (*SessionTree, error) {
	var b TreeBuilder
	for kr, err := range records {
		if err != nil {
			return nil, err
		}
		if err := b.Add(kr); err != nil {
			return nil, err
		}
	}
	return b.Tree(), nil
}

// TreeBuilder builds a SessionTree from records handed to it one at a
// time, in stamp order: for a caller that reads sessions in a loop of its
// own, visiting each record, as BuildTree reads an iterator. The zero
// TreeBuilder is ready to use.
type TreeBuilder struct {
	t       *SessionTree
	ns      Nesting
	outOf   bool // a seq came out of order, or twice
	prevSeq uint64
}

// Add places the next record of the session in the tree. A record of
// another session than the first one added is refused with an error, as
// is a record past the math.MaxInt32th (ErrTooManyRecords).
func (b *TreeBuilder) Add(kr sessions.KindRecord) error {
	if b.t == nil {
		b.t = &SessionTree{ID: kr.Stamp.Session, first: -1, last: -1}
	}
	t := b.t
	switch {
	case t.nodes.n == 0:
		t.ID = kr.Stamp.Session
	case kr.Stamp.Session != t.ID:
		return fmt.Errorf("explain: one tree given records of sessions %s and %s", t.ID, kr.Stamp.Session)
	case t.nodes.n == math.MaxInt32:
		return ErrTooManyRecords
	case kr.Stamp.Seq <= b.prevSeq:
		b.outOf = true
	}
	b.prevSeq = kr.Stamp.Seq
	n := t.nodes.add()
	n.KindRecord = kr
	b.ns.place(n)
	i := n.index
	if n.parent >= 0 {
		p := t.nodes.at(n.parent)
		if p.last >= 0 {
			t.nodes.at(p.last).next = i
		} else {
			p.first = i
		}
		p.last = i
	} else {
		if t.last >= 0 {
			t.nodes.at(t.last).next = i
		} else {
			t.first = i
		}
		t.last = i
	}
	return nil
}

// Tree returns the tree of the records added, and leaves the builder
// empty, ready for the next session. With no records added, the tree is
// empty.
func (b *TreeBuilder) Tree() *SessionTree {
	t := b.t
	if t == nil {
		t = &SessionTree{first: -1, last: -1}
	}
	if b.outOf {
		// Only a damaged store gives seqs out of order (or twice): look
		// them up by map rather than by binary search. The first record
		// with a seq keeps it.
		t.bySeq = make(map[uint64]int32, t.nodes.n)
		for i := range int32(t.nodes.n) {
			seq := t.nodes.at(i).Stamp.Seq
			if _, dup := t.bySeq[seq]; !dup {
				t.bySeq[seq] = i
			}
		}
	}
	*b = TreeBuilder{}
	return t
}

// Len returns how many records the tree holds.
func (t *SessionTree) Len() int { return t.nodes.n }

// BySeq returns the node of the record with the given seq, or nil if the
// session has none.
func (t *SessionTree) BySeq(seq uint64) *Node {
	if t.bySeq != nil {
		if i, ok := t.bySeq[seq]; ok {
			return t.nodes.at(i)
		}
		return nil
	}
	i := sort.Search(t.nodes.n, func(i int) bool { return t.nodes.at(int32(i)).Stamp.Seq >= seq })
	if i == t.nodes.n || t.nodes.at(int32(i)).Stamp.Seq != seq {
		return nil
	}
	return t.nodes.at(int32(i))
}

// node returns the node at position i, or nil for -1.
func (t *SessionTree) node(i int32) *Node {
	if i < 0 {
		return nil
	}
	return t.nodes.at(i)
}

// Parent returns the node n hangs under, or nil for a root. n must be a
// node of t.
func (t *SessionTree) Parent(n *Node) *Node { return t.node(n.parent) }

// NextSibling returns the node after n under the same parent (among the
// roots, for a root), or nil when n is the last: what a renderer asks to
// draw └─ rather than ├─. n must be a node of t.
func (t *SessionTree) NextSibling(n *Node) *Node { return t.node(n.next) }

// Roots yields the session's roots in stamp order.
func (t *SessionTree) Roots() iter.Seq[*Node] { return t.siblings(t.first) }

// Children yields the records that hang under n, in stamp order. n must be
// a node of t.
func (t *SessionTree) Children(n *Node) iter.Seq[*Node] { return t.siblings(n.first) }

func (t *SessionTree) siblings(i int32) iter.Seq[*Node] {
	return func(yield func(*Node) bool) {
		for ; i >= 0; i = t.nodes.at(i).next {
			if !yield(t.nodes.at(i)) {
				return
			}
		}
	}
}

// Walk yields every node in pre-order: each root, then the records under
// it, each child before its own children, siblings in stamp order. Node
// depths say where each one hangs. It needs no stack, however deep the
// tree: it climbs back through parents, each link once.
func (t *SessionTree) Walk() iter.Seq[*Node] {
	return func(yield func(*Node) bool) {
		for i := t.first; i >= 0; {
			n := t.nodes.at(i)
			if !yield(n) {
				return
			}
			if n.first >= 0 {
				i = n.first
				continue
			}
			for i >= 0 && t.nodes.at(i).next < 0 {
				i = t.nodes.at(i).parent
			}
			if i >= 0 {
				i = t.nodes.at(i).next
			}
		}
	}
}
