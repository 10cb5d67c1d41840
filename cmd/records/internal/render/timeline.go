package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

// FlushEvery is how many text lines a long listing (dump, show, a
// session's tree) aligns at a time: a table holds everything until it is
// flushed, and a listing can be long.
const FlushEvery = 1024

// Tree writes a session's tree as an indented table under a line
// naming the session.
func Tree(w io.Writer, r *sessions.Records, s sessions.Session, t *explain.SessionTree, all bool) error {
	label := ""
	if s.Label != "" {
		label = "  " + Clean(s.Label)
	}
	if _, err := fmt.Fprintf(w, "session %s%s  started %s  lasted %s\n",
		s.ID, label, Time(time.UnixMilli(s.StartedUnixMs)), Duration(t.Summary().End)); err != nil {
		return err
	}
	if t.Len() == 0 {
		_, err := io.WriteString(w, "(no records)\n")
		return err
	}
	var expanded map[uint64]bool // the roots printed, when not all
	if !all {
		var err error
		if expanded, err = rootGroups(w, r, t); err != nil {
			return err
		}
	}
	tab := NewTable(w)
	if err := tab.Row("OFFSET", "WALL", "EFFECT", "KIND", "RECORD"); err != nil {
		return err
	}
	// Roots start at the margin; the records inside one hang under it on
	// branches. more[d] says whether the record at depth d on the way
	// down has a sibling still to come, so its column carries a │.
	more := make([]bool, 0, MaxIndent+1)
	n := 0
	var root uint64
	for node := range t.Walk() {
		if node.Depth == 0 {
			root = node.Seq
		}
		if expanded != nil && !expanded[root] {
			continue // summed up by rootGroups
		}
		next := t.NextSibling(node) != nil
		depth := int(node.Depth)
		if depth <= MaxIndent {
			more = append(more[:depth], next)
		}
		name, err := summary.Name(r, t, node)
		if err != nil {
			return err
		}
		if err := tab.Row(Duration(node.Offset), Duration(node.Wall), NodeEffect(node), t.Kind(node),
			branches(more, depth, next)+OrDash(name)); err != nil {
			return err
		}
		// A tabwriter holds everything until flushed: keep a long
		// session's memory bounded, as dump does.
		if n++; n%FlushEvery == 0 {
			if err := tab.Flush(); err != nil {
				return err
			}
		}
	}
	return tab.Flush()
}

// rootGroups sums up the roots of a session that has more than a
// screenful whose names repeat (summary.GroupRoots): a table of them by
// kind and name, and a line naming the slowest, which the tree below
// prints whole. It returns their seqs, or nil (and prints nothing) when
// the roots are printed each.
func rootGroups(w io.Writer, r *sessions.Records, t *explain.SessionTree) (map[uint64]bool, error) {
	g := summary.GroupRoots(t)
	if g == nil {
		return nil, nil
	}
	if _, err := fmt.Fprintf(w, "%d roots, by kind and name (records timeline --all prints each):\n", g.Roots); err != nil {
		return nil, err
	}
	tab := NewTable(w)
	if err := tab.Row("  KIND", "NAME", "ROOTS", "MEDIAN", "P90", "MAX", "SLOWEST SEQ"); err != nil {
		return nil, err
	}
	for _, rg := range g.Groups {
		name, err := summary.GroupName(r, t, rg)
		if err != nil {
			return nil, err
		}
		if err := tab.Row("  "+rg.Kind, OrDash(name), strconv.Itoa(rg.Count), Duration(rg.Median),
			Duration(rg.P90), Duration(rg.Max), strconv.FormatUint(rg.Slowest, 10)); err != nil {
			return nil, err
		}
	}
	if err := tab.Flush(); err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(w, "the %d slowest roots, whole:\n", len(g.Slowest)); err != nil {
		return nil, err
	}
	expanded := make(map[uint64]bool, len(g.Slowest))
	for _, seq := range g.Slowest {
		expanded[seq] = true
	}
	return expanded, nil
}

// branches returns the tree drawing before a record at depth: a column
// per level above it (│ where the record at that level has siblings still
// to come), then its own branch: ├─, or └─ for the last of its siblings
// (next says which). Past MaxIndent levels the drawing stops growing and
// says the depth.
func branches(more []bool, depth int, next bool) string {
	if depth == 0 {
		return ""
	}
	var b strings.Builder
	for d := 1; d < min(depth, MaxIndent); d++ {
		if more[d] {
			b.WriteString("│  ")
		} else {
			b.WriteString("   ")
		}
	}
	if depth >= MaxIndent {
		b.WriteString("[depth " + strconv.Itoa(depth) + "] ")
	}
	if next {
		b.WriteString("├─ ")
	} else {
		b.WriteString("└─ ")
	}
	return b.String()
}
