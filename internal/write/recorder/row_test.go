package recorder_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// storedRow returns the one session row in s, decoded, and its encoded
// size.
func storedRow(t *testing.T, s sessions.Store) (sessions.Session, int) {
	t.Helper()
	var rows []sessions.Session
	size := 0
	for e, err := range s.Scan([]byte(keys.Sessions), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if keys.IsSession(e.Key) {
			size = len(e.Value)
		}
	}
	for row, err := range sessions.NewRecords(s).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	if len(rows) != 1 {
		t.Fatalf("%d session rows, want 1", len(rows))
	}
	return rows[0], size
}

// TestOversizedSessionRowIsCut: a label or resource value no store takes
// (17 MiB; Badger's largest value is 16 MiB) is cut to MaxSessionValue,
// and so is every other oversized part of the Resource; attributes past
// MaxSessionRow are left out; the row says so in TruncatedKey; a row
// within the limits is written as it is.
func TestOversizedSessionRowIsCut(t *testing.T) {
	const max = keys.MaxSessionValue
	huge := strings.Repeat("é", 17<<20/2) // 17 MiB of 2-byte characters
	many := make([]string, 100_000)
	for i := range many {
		many[i] = "element"
	}
	res := sessions.Attrs{
		{Key: "service.name", Value: sessions.StringValue("build")},
		{Key: "big", Value: sessions.StringValue(huge)},
		{Key: strings.Repeat("k", 70_000), Value: sessions.BoolValue(true)},
		{Key: "strings", Value: sessions.SliceValue(many)},
		{Key: "ints", Value: sessions.SliceValue(make([]int64, 100_000))},
	}
	// Then 30 more of 60 KiB each: 1.8 MiB, past the row's limit.
	for i := range 30 {
		res = append(res, sessions.Attr{Key: fmt.Sprint("pad", i), Value: sessions.StringValue(strings.Repeat("p", 60<<10))})
	}
	f := newFixture(t, recorder.Config{Label: huge, Resource: res}, newOpStore())
	f.record("compile", "change", sessions.Changed, 0)
	if err := f.rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	row, size := storedRow(t, f.store)
	pads := 0
	for _, kv := range row.Resource {
		if strings.HasPrefix(kv.Key, "pad") {
			pads++
		}
	}
	t.Logf("session row: %d bytes, label %d bytes, %d resource attributes, %d of 30 padding ones", size, len(row.Label), len(row.Resource), pads)
	if size > keys.MaxSessionRow {
		t.Errorf("session row of %d bytes, want at most %d", size, keys.MaxSessionRow)
	}
	if len(row.Label) > max || len(row.Label) < max-1 || !strings.HasPrefix(huge, row.Label) || !strings.HasSuffix(row.Label, "é") {
		t.Errorf("label cut to %d bytes, want the first %d bytes or 1 less, at a character boundary", len(row.Label), max)
	}
	if v, ok := row.Resource.Get(recorder.TruncatedKey); !ok || !v.AsBool() {
		t.Errorf("resource has no %s=true: %d attributes", recorder.TruncatedKey, len(row.Resource))
	}
	if v, _ := row.Resource.Get("service.name"); v.AsString() != "build" {
		t.Errorf("service.name = %q", v.AsString())
	}
	if v, _ := row.Resource.Get("big"); len(v.AsString()) > max || !strings.HasPrefix(huge, v.AsString()) {
		t.Errorf("big cut to %d bytes", len(v.AsString()))
	}
	if _, ok := row.Resource.Get(strings.Repeat("k", max)); !ok {
		t.Error("the long key was not cut to MaxSessionValue")
	}
	if v, _ := row.Resource.Get("strings"); len(v.Any().([]string)) != max/len("element")+1 {
		t.Errorf("strings cut to %d elements, want %d", len(v.Any().([]string)), max/len("element")+1)
	}
	if v, _ := row.Resource.Get("ints"); len(v.Any().([]int64)) != max/8 {
		t.Errorf("ints cut to %d elements, want %d", len(v.Any().([]int64)), max/8)
	}
	if _, ok := row.Resource.Get("pad0"); !ok {
		t.Error("the first padding attribute was left out; only the last ones should be")
	}
	if _, ok := row.Resource.Get("pad29"); ok {
		t.Error("the row holds every padding attribute, past its limit")
	}
	if got := names(t, f.store, "compile"); len(got) != 1 {
		t.Errorf("records = %q", got)
	}

	// A row within the limits is left as it is: no marker.
	g := newFixture(t, recorder.Config{Label: "models build", Resource: res[:1]}, newOpStore())
	g.record("compile", "change", sessions.Changed, 0)
	if err := g.rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if row, _ := storedRow(t, g.store); row.Label != "models build" || len(row.Resource) != 1 {
		t.Errorf("a small row came back as %+v", row)
	}
}
