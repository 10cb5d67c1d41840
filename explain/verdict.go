package explain

import "github.com/otelrecords/otelrecords/sessions"

// Verdict is what a record did, as every answer here counts it — Why,
// Rework, the diff's Match, a tree's nodes — so that they agree on which
// records were hits and which were work.
//
// A record is a hit only when it observed (changed nothing itself) and no
// record inside it, at any depth, changed anything: a lookup that found
// its key. An observed record inside which something changed is a miss:
// the lookup that did not find its key, and compiled it inside. A miss is
// work, never a hit, though its own span changed nothing: the work was
// done inside it, on its watch.
type Verdict uint8

// The verdicts.
const (
	// Unknown is a record that does not say whether it changed anything
	// (written before records kept their effect): counted as work, as
	// such stores cannot tell.
	Unknown Verdict = iota
	// Hit is a record that changed nothing, and inside which nothing
	// changed: the work found done.
	Hit
	// Miss is a record that changed nothing itself, but inside which a
	// record changed something: it looked, did not find, and the work
	// was done inside it.
	Miss
	// Done is a record that changed something itself: the work done.
	Done
)

// String returns "hit", "missed", "changed" or "unknown".
func (v Verdict) String() string {
	switch v {
	case Hit:
		return "hit"
	case Miss:
		return "missed"
	case Done:
		return "changed"
	}
	return "unknown"
}

// IsWork reports whether the record counts as work: every verdict but a
// hit.
func (v Verdict) IsWork() bool { return v != Hit }

// judge is the one rule: the verdict of a record with this effect (known
// or not), inside which something changed or nothing did.
func judge(effect sessions.Effect, known, changedInside bool) Verdict {
	switch {
	case !known:
		return Unknown
	case effect == sessions.Changed:
		return Done
	case changedInside:
		return Miss
	}
	return Hit
}

// ChangeInside returns the first record (in stamp order) inside n, at any
// depth, that changed something, or nil when none did: what made a miss
// of an observed record. n must be a node of t.
func (t *SessionTree) ChangeInside(n *Node) *Node {
	if !n.has(flagChangedInside) {
		return nil
	}
	t.changesOnce.Do(func() {
		// A parent comes before its children: one pass backwards carries
		// each record's first change up to its parent.
		t.changes = make([]int32, t.nodes.Len())
		for i := range t.changes {
			t.changes[i] = -1
		}
		for i := int32(t.nodes.Len()) - 1; i >= 0; i-- {
			nd := t.nodes.At(i)
			if nd.parent < 0 {
				continue
			}
			first := t.changes[i]
			if nd.has(flagChanged) {
				first = i
			}
			if p := &t.changes[nd.parent]; first >= 0 && (*p < 0 || first < *p) {
				*p = first
			}
		}
	})
	return t.node(t.changes[t.pos(n)])
}
