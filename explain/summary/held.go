package summary

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// HeldNameMax is the most bytes of a record's name that a view holding a
// whole session's records (a tree, the slowest records) keeps: a name
// longer is cut (Cut).
const HeldNameMax = 4 << 10

// Cut returns s whole when it is at most n bytes, else its first n bytes
// or fewer, at a character boundary, and a marker saying how many bytes
// were left out ("… [1048576 bytes cut]"); and whether it cut. A value may
// be megabytes (a record is up to 15 MiB): a view that holds records for a
// while holds them cut. A cut string is a copy, so it does not keep s
// alive.
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.Clone(s[:i]) + fmt.Sprintf("… [%d bytes cut]", len(s)-i), true
}

// Name returns the name of a tree node's record: the tree's, or, where the
// tree does not hold it (a long name, or a session of very many names),
// the record's, read again and cut to HeldNameMax.
func Name(r *sessions.Records, t *explain.SessionTree, n *explain.Node) (string, error) {
	if name, ok := t.Name(n); ok {
		return name, nil
	}
	kr, err := t.Record(r, n)
	if err != nil {
		return "", err
	}
	name, _ := Cut(kr.Record.Name, HeldNameMax)
	return name, nil
}

// GroupName returns the name of a group of roots: the tree's, or the name
// of its slowest root, read again (Name).
func GroupName(r *sessions.Records, t *explain.SessionTree, g explain.RootGroup) (string, error) {
	if g.NameHeld {
		return g.Name, nil
	}
	return Name(r, t, t.BySeq(g.Slowest))
}

// Compact returns what a view that holds a whole session's records keeps
// of one (what a tree needs: its name, ids, times, status and effect): rec
// without its attributes, events and links, its name and status cut to
// HeldNameMax, and every string a copy of its own. A decoded record's
// strings share one copy of its value (package sessions), so a name held
// as read would keep the record's every byte alive.
func Compact(rec sessions.Record) sessions.Record {
	name, _ := Cut(rec.Name, HeldNameMax)
	out := sessions.Record{
		Name:         strings.Clone(name),
		Wall:         rec.Wall,
		Status:       sessions.Status{Code: strings.Clone(rec.Status.Code), Description: strings.Clone(rec.Status.Description)},
		TraceID:      rec.TraceID,
		SpanID:       rec.SpanID,
		ParentSpanID: rec.ParentSpanID,
		SpanKind:     strings.Clone(rec.SpanKind),
		Effect:       rec.Effect,
	}
	out.Status.Description, _ = Cut(out.Status.Description, HeldNameMax)
	if rec.Inputs != nil {
		// Nil and empty differ: empty says no attribute is an input.
		out.Inputs = make([]string, len(rec.Inputs))
		for i, k := range rec.Inputs {
			out.Inputs[i] = strings.Clone(k)
		}
	}
	return out
}
