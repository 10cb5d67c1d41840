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
