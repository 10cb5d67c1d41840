package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// Plural formats n things, as "1 session" or "2 sessions".
func Plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// Bytes formats a size in bytes for people, in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// PID formats a process id, or "-" for a session known only by the
// records it left.
func PID(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// Counts formats counts per kind as "kind=n" pairs in kind order.
func Counts(c map[string]int) string {
	var b strings.Builder
	for i, kind := range slices.Sorted(maps.Keys(c)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kind)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(c[kind]))
	}
	return b.String()
}

// Status formats a status as "error: description", "ok", or "" when
// unset.
func Status(st sessions.Status) string {
	switch {
	case st.Code == "" || st.Code == "unset":
		return ""
	case st.Description != "":
		return st.Code + ": " + st.Description
	}
	return st.Code
}

// Effect returns the record's effect as the text views print it:
// "changed", "observed", or "-" where the record does not say (one written
// before records kept their effect, which reads as observed whatever it
// did: explain.StoredBody).
func Effect(rec *sessions.Record) string {
	if effect, known := explain.StoredBody.Effect(rec); known {
		return effect.String()
	}
	return "-"
}

// NodeEffect returns a tree node's effect as the text views print it, as
// Effect does a record's.
func NodeEffect(n *explain.Node) string {
	if effect, known := n.Effect(); known {
		return effect.String()
	}
	return "-"
}

// Verdict returns what a record did, "changed", "missed" or "hit", or ""
// for a record that does not say.
func Verdict(v explain.Verdict) string {
	if v == explain.Unknown {
		return ""
	}
	return v.String()
}
