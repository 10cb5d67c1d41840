package spanbridge_test

import (
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

const bad = "x\xff\xfey"

// setStrings sets every string field of v (a pointer to a struct), and
// of the structs and slices of structs in it, to s, and returns how many
// it set. Attribute values are not fields; the test sets them itself.
func setStrings(v reflect.Value, s string) int {
	n := 0
	switch v.Kind() {
	case reflect.Pointer:
		return setStrings(v.Elem(), s)
	case reflect.String:
		v.SetString(s)
		return 1
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += setStrings(v.Field(i), s)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			n += setStrings(v.Index(i), s)
		}
	}
	return n
}

// allStrings returns every string of v, as setStrings walks it, and every
// attribute key and string value.
func allStrings(v reflect.Value) []string {
	var out []string
	switch v.Kind() {
	case reflect.Pointer:
		return allStrings(v.Elem())
	case reflect.String:
		return []string{v.String()}
	case reflect.Struct:
		if a, ok := v.Interface().(sessions.Attr); ok {
			out = append(out, a.Key)
			switch x := a.Value.Any().(type) {
			case string:
				out = append(out, x)
			case []string:
				out = append(out, x...)
			}
			return out
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = append(out, allStrings(v.Field(i))...)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, allStrings(v.Index(i))...)
		}
	}
	return out
}

// TestRepairUTF8: every string of a record and of a session row — every
// string field, found by reflection so that a field added later is
// covered too, and every attribute key and string value — comes out
// UTF-8, with U+FFFD for the invalid bytes; a record that was UTF-8
// already is not changed; slices shared with another record are left
// alone.
func TestRepairUTF8(t *testing.T) {
	attrs := func() sessions.Attrs {
		return sessions.Attrs{
			{Key: bad, Value: sessions.StringValue("v")},
			{Key: "s", Value: sessions.StringValue(bad)},
			{Key: "a", Value: sessions.SliceValue([]string{"ok", bad})},
			{Key: "n", Value: sessions.Int64Value(1)},
		}
	}
	rec := sessions.Record{Attributes: attrs(), Events: []sessions.Event{{Attributes: attrs()}, {}}}
	if n := setStrings(reflect.ValueOf(&rec), bad); n < 6 {
		t.Fatalf("set %d string fields, want the name, status, scope and events' names", n)
	}
	shared := rec.Events
	sharedAttrs := rec.Attributes
	if !spanbridge.RepairUTF8(&rec) {
		t.Fatal("RepairUTF8 changed nothing")
	}
	for _, s := range allStrings(reflect.ValueOf(rec)) {
		if !utf8.ValidString(s) {
			t.Errorf("%q left as it was", s)
		}
	}
	if rec.Name != "x\uFFFDy" {
		t.Errorf("name %q, want x\\uFFFDy", rec.Name)
	}
	if shared[0].Name != bad || sharedAttrs[0].Key != bad {
		t.Error("RepairUTF8 changed slices the record shared")
	}
	before := rec
	before.Attributes, before.Events = slices.Clone(rec.Attributes), slices.Clone(rec.Events)
	if spanbridge.RepairUTF8(&rec) || !reflect.DeepEqual(before, rec) {
		t.Error("a repaired record was changed again")
	}

	s := sessions.Session{Resource: attrs()}
	setStrings(reflect.ValueOf(&s), bad)
	if !spanbridge.RepairSessionUTF8(&s) {
		t.Fatal("RepairSessionUTF8 changed nothing")
	}
	for _, str := range allStrings(reflect.ValueOf(s)) {
		if !utf8.ValidString(str) {
			t.Errorf("session: %q left as it was", str)
		}
	}
}
