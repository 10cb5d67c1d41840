package main

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/sessions"
)

// A view that holds records for a while (the report, which lays a whole
// session out before it writes a line) holds them cut: a value may be
// megabytes (a record is up to 15 MiB), and a page of 20,000 bars of
// whole values would be gigabytes, in memory and in the browser. Cut text
// ends with a marker saying how much was left out, and the view counts
// the values it cut, to say so.
const (
	// reportValueMax is the most bytes of one attribute value, or key,
	// a report shows.
	reportValueMax = 1 << 10
	// reportDetailsMax is the most bytes of a bar's details (its
	// hover text): the attributes and events past it are left out.
	reportDetailsMax = 4 << 10
)

// cutText returns s whole when it is at most n bytes, else its first n
// bytes or fewer, at a character boundary, and a marker saying how many
// bytes were left out; and whether it cut. A cut string is a copy, so it
// does not keep s alive.
func cutText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.Clone(s[:i]) + fmt.Sprintf("… [%d bytes cut]", len(s)-i), true
}

// cutAttr is an attribute as a view that holds it shows it: its key and
// its formatted value, each cut to reportValueMax.
type cutAttr struct {
	key, value string
}

// cutAttrs formats attrs for a view that holds them, cut, and adds how
// many keys and values it cut to *cut.
func cutAttrs(attrs sessions.Attrs, cut *int) []cutAttr {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]cutAttr, len(attrs))
	for i, kv := range attrs {
		k, kc := cutText(clean(kv.Key), reportValueMax)
		v, vc := cutText(formatValue(kv.Value), reportValueMax)
		if kc {
			*cut++
		}
		if vc {
			*cut++
		}
		out[i] = cutAttr{strings.Clone(k), strings.Clone(v)}
	}
	return out
}

// heldNameMax is the most bytes of a record's name that a view holding a
// whole session's records (a tree) keeps.
const heldNameMax = 4 << 10

// compactRecord returns what a view that holds a whole session's records
// keeps of one (a tree needs its name, ids, times, status and effect):
// rec without its attributes, events and links, its name cut to
// heldNameMax, and every string a copy of its own. A decoded record's
// strings share one copy of its value (package sessions), so a name held
// as read would keep the record's every byte alive.
func compactRecord(rec sessions.Record) sessions.Record {
	name, _ := cutText(rec.Name, heldNameMax)
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
	out.Status.Description, _ = cutText(out.Status.Description, heldNameMax)
	if rec.Inputs != nil {
		// Nil and empty differ: empty says no attribute is an input.
		out.Inputs = make([]string, len(rec.Inputs))
		for i, k := range rec.Inputs {
			out.Inputs[i] = strings.Clone(k)
		}
	}
	return out
}

// ownAttrs returns a copy of attrs whose keys and string values are
// copies of their own, whole: attributes a view holds and matches on (a
// key), which cutting would change.
func ownAttrs(attrs sessions.Attrs) sessions.Attrs {
	if attrs == nil {
		return nil
	}
	out := make(sessions.Attrs, len(attrs))
	for i, kv := range attrs {
		v := kv.Value
		if s, ok := v.Any().(string); ok {
			v = sessions.StringValue(strings.Clone(s))
		}
		out[i] = sessions.Attr{Key: strings.Clone(kv.Key), Value: v}
	}
	return out
}
