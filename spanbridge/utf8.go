package spanbridge

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/sessions"
)

// Replacement stands in for each run of bytes that are not UTF-8 in a
// repaired string (strings.ToValidUTF8): U+FFFD, as encoding/json writes
// it.
const Replacement = "\uFFFD"

// RepairUTF8 replaces each run of invalid UTF-8 in the strings of rec
// (its name, attribute keys and string values, string arrays, events and
// their attributes, status description, scope) with Replacement, and
// reports whether it changed anything. Slices it changes are copied
// first, so a record sharing them with another is left alone.
//
// A store keeps the bytes a span was given (docs/FORMAT.md §3.3), but
// OTLP carries strings as protobuf strings, which must be UTF-8: one
// invalid string makes the OTLP exporter, or the receiver, refuse its
// whole batch. So every way from a store to OTLP repairs its records
// here — replay.Replay, and through it `records replay` and `records
// export --format otlp-json` — and says which it repaired.
func RepairUTF8(rec *sessions.Record) bool {
	changed := false
	fix := func(s *string) {
		if !utf8.ValidString(*s) {
			*s, changed = strings.ToValidUTF8(*s, Replacement), true
		}
	}
	fix(&rec.Name)
	fix(&rec.Status.Code) // sent as a code, not a string; repaired all the same
	fix(&rec.Status.Description)
	fix(&rec.Scope.Name)
	fix(&rec.Scope.Version)
	fix(&rec.SpanKind)
	fix(&rec.TraceState)
	if a, ok := repairAttrs(rec.Attributes); ok {
		rec.Attributes, changed = a, true
	}
	inputs := false // rec.Inputs is this record's own copy
	for i, in := range rec.Inputs {
		if !utf8.ValidString(in) {
			if !inputs {
				rec.Inputs, inputs = slices.Clone(rec.Inputs), true
			}
			rec.Inputs[i], changed = strings.ToValidUTF8(in, Replacement), true
		}
	}
	links := false
	for i := range rec.Links {
		l := rec.Links[i]
		lc := false
		if !utf8.ValidString(l.TraceState) {
			l.TraceState, lc = strings.ToValidUTF8(l.TraceState, Replacement), true
		}
		if a, ok := repairAttrs(l.Attributes); ok {
			l.Attributes, lc = a, true
		}
		if !lc {
			continue
		}
		if !links {
			rec.Links, links = slices.Clone(rec.Links), true
		}
		rec.Links[i], changed = l, true
	}
	copied := false
	for i := range rec.Events {
		e := rec.Events[i]
		ec := false
		if !utf8.ValidString(e.Name) {
			e.Name, ec = strings.ToValidUTF8(e.Name, Replacement), true
		}
		if a, ok := repairAttrs(e.Attributes); ok {
			e.Attributes, ec = a, true
		}
		if !ec {
			continue
		}
		if !copied {
			rec.Events, copied = slices.Clone(rec.Events), true
		}
		rec.Events[i], changed = e, true
	}
	return changed
}

// RepairSessionUTF8 is RepairUTF8 for a session row: its label, version,
// OS, architecture and Resource, which Resource turns into the Resource
// every span of the session is sent under.
func RepairSessionUTF8(s *sessions.Session) bool {
	changed := false
	for _, p := range []*string{&s.Label, &s.Version, &s.OS, &s.Arch} {
		if !utf8.ValidString(*p) {
			*p, changed = strings.ToValidUTF8(*p, Replacement), true
		}
	}
	if a, ok := repairAttrs(s.Resource); ok {
		s.Resource, changed = a, true
	}
	return changed
}

// repairAttrs returns a copy of attrs with its keys and string values
// repaired, and true, or attrs itself and false when all were UTF-8.
func repairAttrs(attrs sessions.Attrs) (sessions.Attrs, bool) {
	var out sessions.Attrs
	for i, kv := range attrs {
		k, v, ok := repairAttr(kv)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(attrs)
		}
		out[i] = sessions.Attr{Key: k, Value: v}
	}
	return out, out != nil
}

func repairAttr(kv sessions.Attr) (string, sessions.Value, bool) {
	k, v, changed := kv.Key, kv.Value, false
	if !utf8.ValidString(k) {
		k, changed = strings.ToValidUTF8(k, Replacement), true
	}
	switch x := v.Any().(type) {
	case string:
		if !utf8.ValidString(x) {
			v, changed = sessions.StringValue(strings.ToValidUTF8(x, Replacement)), true
		}
	case []string:
		if i := slices.IndexFunc(x, func(s string) bool { return !utf8.ValidString(s) }); i >= 0 {
			out := slices.Clone(x)
			for j := i; j < len(out); j++ {
				out[j] = strings.ToValidUTF8(out[j], Replacement)
			}
			v, changed = sessions.SliceValue(out), true
		}
	}
	return k, v, changed
}
