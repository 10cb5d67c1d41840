package explain

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/otelrecords/otelrecords/explain/internal/chunks"
	"github.com/otelrecords/otelrecords/sessions"
)

// Node is a record in its session's tree, held compact: where the record
// is stored (its seq: with the tree's session and the node's kind, the
// key to read it again, SessionTree.Record), when it ran, what it did,
// and where it hangs — not the record. A tree holds 48 bytes a record,
// and each kind and name once however many records carry it, so its
// memory follows the session's records, never their attributes, events
// or values.
type Node struct {
	// Seq is the record's seq.
	Seq uint64
	// Offset is when the record started on its session's clock (its
	// stamp's offset), and Wall how long it ran.
	Offset, Wall time.Duration
	// Depth is how many records this one lies inside: 0 for a root.
	Depth int32

	kind int32 // in the tree's kinds
	// tag is the record's name (its number in the tree's names, plus 1;
	// 0 for a name not held) in its low 24 bits, and its nodeFlags in
	// the high 8: one word for both keeps a node at 48 bytes.
	tag uint32
	// Positions in the order the session's records were placed, -1 for
	// none: the node's parent's, its first child's and its next
	// sibling's. Children are a linked list, not a slice per node, so a
	// tree costs the same per record whatever its shape.
	parent, first, next int32
}

// nodeFlags say what a node's record did, in the high byte of its tag.
type nodeFlags uint32

// tagNameBits are the bits of a tag that hold the name: room for every
// name a tree holds (heldNamesMax).
const tagNameBits = 24

const (
	// flagKnown: the record says whether it changed anything.
	flagKnown nodeFlags = 1 << (tagNameBits + iota)
	// flagChanged: it changed something.
	flagChanged
	// flagRequest: its span answered a request from outside the process
	// (isRequest).
	flagRequest
	// flagChangedInside: a record inside it, at any depth, changed
	// something.
	flagChangedInside
)

// Effect returns the record's effect, read through the tree builder's
// Body, and whether the record says.
func (n *Node) Effect() (sessions.Effect, bool) {
	if n.has(flagChanged) {
		return sessions.Changed, true
	}
	return sessions.Observed, n.has(flagKnown)
}

// Verdict returns what the record did (see Verdict): whether it was a
// hit, a miss or work.
func (n *Node) Verdict() Verdict {
	effect, known := n.Effect()
	return judge(effect, known, n.has(flagChangedInside))
}

func (n *Node) has(f nodeFlags) bool { return nodeFlags(n.tag)&f != 0 }
func (n *Node) set(f nodeFlags)      { n.tag |= uint32(f) }

// name returns the number of the record's name in the tree's names, or
// noName.
func (n *Node) name() int32 { return int32(n.tag&(1<<tagNameBits-1)) - 1 }

// placed is what a later record needs of a span's record to hang under
// it, in a Nesting.
type placed struct {
	seq   uint64
	depth int32
}

// Placement is where Nesting places a record in its session's tree.
type Placement struct {
	// Depth is how many records this one lies inside: 0 for a root.
	Depth int
	// ParentSeq is the seq of the record this one hangs under. It means
	// nothing for a root (Depth 0): seq 0 is a record like any other.
	ParentSeq uint64
}

// Nesting places the records of a session, given in stamp order, in the
// session's tree as they come: each record's depth and parent are known
// when it arrives, so a program can walk a session once, holding a few
// words per span (about 30 bytes) rather than the records.
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
	spans   chunks.SpanIndex
	placed  chunks.Chunked[placed] // by position
}

// Place returns where the next record of the session hangs: its depth and
// its parent's seq.
func (ns *Nesting) Place(kr sessions.KindRecord) Placement {
	if !ns.started || kr.Stamp.Session != ns.session {
		*ns = Nesting{started: true, session: kr.Stamp.Session}
	}
	if ns.placed.Len() == math.MaxInt32 {
		// Positions are int32 to keep them small; no session this large
		// fits in memory anyway, but a stream may still pass by.
		return Placement{}
	}
	rec := &kr.Record
	var pl Placement
	p := placed{seq: kr.Stamp.Seq}
	if !rec.ParentSpanID.IsZero() {
		if i := ns.spans.Find(rec.TraceID, rec.ParentSpanID); i >= 0 {
			parent := ns.placed.At(i)
			pl = Placement{Depth: int(parent.depth) + 1, ParentSeq: parent.seq}
			p.depth = parent.depth + 1
		}
	}
	*ns.placed.Add() = p
	ns.spans.Next(rec.TraceID, rec.SpanID)
	return pl
}

// Nested is a record as Nest yields it: the record, and where it hangs.
type Nested struct {
	sessions.KindRecord
	Placement
}

// Nest yields records given in stamp order (as InStampOrder yields them),
// each with where it hangs in its session's tree, in the same order,
// placed as Nesting places them. It holds a few words per span, never a
// record. An error from records ends the sequence with that error.
func Nest(records iter.Seq2[sessions.KindRecord, error]) iter.Seq2[Nested, error] {
	return func(yield func(Nested, error) bool) {
		var ns Nesting
		for kr, err := range records {
			if err != nil {
				yield(Nested{}, err)
				return
			}
			if !yield(Nested{kr, ns.Place(kr)}, nil) {
				return
			}
		}
	}
}

// SessionTree is a session's records as a tree, nested by parent span id
// as Nesting nests them: the roots in stamp order, and under each record
// its children in stamp order. It is built in one pass over the records,
// in time and memory proportional to their number, whatever the shape,
// and holds a Node per record. A SessionTree is not modified once built,
// and is safe for concurrent reads.
type SessionTree struct {
	// ID is the session's id.
	ID sessions.SessionID

	nodes chunks.Chunked[Node] // in the order the records came: stamp order
	first int32                // the first root
	kinds []string
	names []string
	bySeq map[uint64]int32
	// requests are the roots a request opened (flagRequest), with their
	// trace, by position.
	requests []requestRoot
	// unnamed are the roots whose name the tree does not hold, with a
	// hash of it, by position: RootGroups groups them by it.
	unnamed []unnamedRoot

	changesOnce sync.Once
	changes     []int32 // by position: the first changed record inside, or -1
	chunksOnce  sync.Once
	chunkAddrs  []chunkAddr // the chunks of nodes by address, for pos
}

type requestRoot struct {
	index int32
	trace sessions.TraceID
}

type unnamedRoot struct {
	index int32
	hash  uint64
}

// ErrTooManyRecords is returned by BuildTree and Tree for a session of
// more than math.MaxInt32 records.
var ErrTooManyRecords = errors.New("explain: too many records in one session")

// noName is the name of a node whose name the tree does not hold.
const noName = chunks.None

// Names a tree holds: each name once, however many records carry it,
// while they are few and short; past that, a record's name is read again
// from the store (SessionTree.Record), so that a session of a million
// names each of its own holds none of them.
const (
	// heldNameMax is the longest name a tree holds.
	heldNameMax = 1 << 10
	// heldNamesMax is how many names a tree holds at most.
	heldNamesMax = 1 << 16
)

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
	// Body reads each record's effect; nil means StoredBody.
	Body Body

	t       *SessionTree
	spans   chunks.SpanIndex
	kinds   chunks.Interned
	names   chunks.Interned
	seed    maphash.Seed // for the hashes of names not held
	outOf   bool         // a seq came out of order, or twice
	prevSeq uint64
}

// Add places the next record of the session in the tree. A record of
// another session than the first one added is refused with an error, as
// is a record past the math.MaxInt32th (ErrTooManyRecords).
func (b *TreeBuilder) Add(kr sessions.KindRecord) error {
	if b.t == nil {
		b.t = &SessionTree{ID: kr.Stamp.Session, first: -1}
	}
	t := b.t
	switch {
	case t.nodes.Len() == 0:
		t.ID = kr.Stamp.Session
	case kr.Stamp.Session != t.ID:
		return fmt.Errorf("explain: one tree given records of sessions %s and %s", t.ID, kr.Stamp.Session)
	case t.nodes.Len() == math.MaxInt32:
		return ErrTooManyRecords
	case kr.Stamp.Seq <= b.prevSeq:
		b.outOf = true
	}
	b.prevSeq = kr.Stamp.Seq
	rec := &kr.Record
	i := int32(t.nodes.Len())
	n := t.nodes.Add()
	*n = Node{Seq: kr.Stamp.Seq, Offset: kr.Stamp.Offset, Wall: rec.Wall, parent: -1, first: -1, next: -1}
	n.kind = b.kinds.ID(kr.Kind, math.MaxInt32)
	name := int32(noName)
	if len(rec.Name) <= heldNameMax {
		name = b.names.ID(rec.Name, heldNamesMax)
	}
	n.tag = uint32(name + 1)
	body := b.Body
	if body == nil {
		body = StoredBody
	}
	if effect, known := body.Effect(rec); known {
		n.set(flagKnown)
		if effect == sessions.Changed {
			n.set(flagChanged)
		}
	}
	if isRequest(rec.SpanKind) {
		n.set(flagRequest)
	}
	p := int32(-1)
	if !rec.ParentSpanID.IsZero() {
		p = b.spans.Find(rec.TraceID, rec.ParentSpanID)
	}
	b.spans.Next(rec.TraceID, rec.SpanID)
	// Children and roots are put first in their lists, which Tree turns
	// round: appending would need the last of each list, a word a node.
	if p >= 0 {
		parent := t.nodes.At(p)
		n.Depth, n.parent = parent.Depth+1, p
		n.next, parent.first = parent.first, i
		return nil
	}
	n.next, t.first = t.first, i
	if n.has(flagRequest) {
		t.requests = append(t.requests, requestRoot{i, rec.TraceID})
	}
	if name == noName {
		if len(t.unnamed) == 0 {
			b.seed = maphash.MakeSeed()
		}
		t.unnamed = append(t.unnamed, unnamedRoot{i, maphash.String(b.seed, rec.Name)})
	}
	return nil
}

// Tree returns the tree of the records added, and leaves the builder
// empty, ready for the next session. With no records added, the tree is
// empty.
func (b *TreeBuilder) Tree() *SessionTree {
	t := b.t
	if t == nil {
		t = &SessionTree{first: -1}
	}
	t.kinds, t.names = b.kinds.List(), b.names.List()
	// Lists were built last first; turn them round.
	reverse := func(i int32) int32 {
		prev := int32(-1)
		for i >= 0 {
			n := t.nodes.At(i)
			i, n.next, prev = n.next, prev, i
		}
		return prev
	}
	t.first = reverse(t.first)
	for i := range int32(t.nodes.Len()) {
		n := t.nodes.At(i)
		n.first = reverse(n.first)
	}
	// What changed inside each record: a parent always comes before its
	// children, so one pass backwards carries every change up to the
	// roots.
	for i := int32(t.nodes.Len()) - 1; i >= 0; i-- {
		n := t.nodes.At(i)
		if n.parent >= 0 && n.has(flagChanged|flagChangedInside) {
			t.nodes.At(n.parent).set(flagChangedInside)
		}
	}
	if b.outOf {
		// Only a damaged store gives seqs out of order (or twice): look
		// them up by map rather than by binary search. The first record
		// with a seq keeps it.
		t.bySeq = make(map[uint64]int32, t.nodes.Len())
		for i := range int32(t.nodes.Len()) {
			seq := t.nodes.At(i).Seq
			if _, dup := t.bySeq[seq]; !dup {
				t.bySeq[seq] = i
			}
		}
	}
	*b = TreeBuilder{Body: b.Body}
	return t
}

// Len returns how many records the tree holds.
func (t *SessionTree) Len() int { return t.nodes.Len() }

// Kind returns the kind of n's record. n must be a node of t.
func (t *SessionTree) Kind(n *Node) string { return t.kinds[n.kind] }

// Name returns the name of n's record, and true; or "" and false when the
// tree does not hold it — a name longer than 1 KiB, or one past the
// 65,536 different names a tree holds — and Record reads it. n must be a
// node of t.
func (t *SessionTree) Name(n *Node) (string, bool) {
	id := n.name()
	if id == noName {
		return "", false
	}
	return t.names[id], true
}

// chunkAddr is where a chunk of a tree's nodes lies in memory, and the
// position of its first node.
type chunkAddr struct {
	addr  uintptr
	first int32
}

// pos returns the position of n, a node of t, in the order the records
// came: from where it lies in its chunk. A node does not hold its
// position, which would make it 56 bytes; the few questions that need it
// (ChangeInside, GroupKey) find it in a sorted list of the chunks.
func (t *SessionTree) pos(n *Node) int32 {
	t.chunksOnce.Do(func() {
		t.chunkAddrs = make([]chunkAddr, len(t.nodes.Chunks()))
		for i, c := range t.nodes.Chunks() {
			t.chunkAddrs[i] = chunkAddr{uintptr(unsafe.Pointer(unsafe.SliceData(c))), int32(i * chunks.ChunkSize)}
		}
		slices.SortFunc(t.chunkAddrs, func(a, b chunkAddr) int { return cmp.Compare(a.addr, b.addr) })
	})
	p := uintptr(unsafe.Pointer(n))
	i, _ := slices.BinarySearchFunc(t.chunkAddrs, p, func(c chunkAddr, p uintptr) int { return cmp.Compare(c.addr, p) })
	if i == len(t.chunkAddrs) || t.chunkAddrs[i].addr != p {
		i-- // n lies past the start of the chunk before
	}
	c := t.chunkAddrs[i]
	return c.first + int32((p-c.addr)/unsafe.Sizeof(Node{}))
}

// Record reads n's record again from r, the store the tree was read from.
// A record the store no longer holds (pruned since) is an error.
func (t *SessionTree) Record(r *sessions.Records, n *Node) (sessions.KindRecord, error) {
	kind := t.Kind(n)
	rec, ok, err := r.Record(kind, t.ID, n.Seq)
	if err != nil {
		return sessions.KindRecord{}, err
	}
	if !ok {
		return sessions.KindRecord{}, fmt.Errorf("explain: session %s has no record %s %d any more", t.ID, kind, n.Seq)
	}
	return sessions.KindRecord{Kind: kind, Stamped: rec}, nil
}

// BySeq returns the node of the record with the given seq, or nil if the
// session has none.
func (t *SessionTree) BySeq(seq uint64) *Node {
	if t.bySeq != nil {
		if i, ok := t.bySeq[seq]; ok {
			return t.nodes.At(i)
		}
		return nil
	}
	i := sort.Search(t.nodes.Len(), func(i int) bool { return t.nodes.At(int32(i)).Seq >= seq })
	if i == t.nodes.Len() || t.nodes.At(int32(i)).Seq != seq {
		return nil
	}
	return t.nodes.At(int32(i))
}

// node returns the node at position i, or nil for -1.
func (t *SessionTree) node(i int32) *Node {
	if i < 0 {
		return nil
	}
	return t.nodes.At(i)
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
		for ; i >= 0; i = t.nodes.At(i).next {
			if !yield(t.nodes.At(i)) {
				return
			}
		}
	}
}

// Nodes yields every node in stamp order (the order the records were
// added): the cheapest way through a tree, for a question that needs no
// nesting.
func (t *SessionTree) Nodes() iter.Seq[*Node] {
	return func(yield func(*Node) bool) {
		for i := range int32(t.nodes.Len()) {
			if !yield(t.nodes.At(i)) {
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
			n := t.nodes.At(i)
			if !yield(n) {
				return
			}
			if n.first >= 0 {
				i = n.first
				continue
			}
			for i >= 0 && t.nodes.At(i).next < 0 {
				i = t.nodes.At(i).parent
			}
			if i >= 0 {
				i = t.nodes.At(i).next
			}
		}
	}
}
