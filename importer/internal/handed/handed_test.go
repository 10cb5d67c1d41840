package handed

import (
	"slices"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

func entries(names ...string) []sessions.Entry {
	var es []sessions.Entry
	for _, n := range names {
		es = append(es, sessions.Entry{Key: []byte("k" + n), Value: []byte("v" + n)})
	}
	return es
}

func keysOf(es []sessions.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Key))
	}
	return out
}

// A batch handed on and not written comes again with more behind it:
// only what came since is handed on. Written, everything is new again.
func TestHeadHandsOnWhatCameSince(t *testing.T) {
	var h Head
	a := entries("1", "2")
	if got := keysOf(h.Rest(a)); !slices.Equal(got, []string{"k1", "k2"}) {
		t.Fatalf("nothing handed on: Rest = %v, want all", got)
	}
	h.Unwritten(a)
	if got := keysOf(h.Rest(entries("1", "2", "3"))); !slices.Equal(got, []string{"k3"}) {
		t.Errorf("the head given again with more: Rest = %v, want [k3]", got)
	}
	if got := h.Rest(entries("1", "2")); len(got) != 0 {
		t.Errorf("the head given again alone: Rest = %v, want none", keysOf(got))
	}
	h.Written()
	if got := keysOf(h.Rest(entries("1", "2"))); len(got) != 2 {
		t.Errorf("once written: Rest = %v, want all", got)
	}
}

// A batch that does not begin with the head (it went another way, or
// shorter) is handed on whole: handed on twice rather than never.
func TestHeadHandsOnAllOfAnotherBatch(t *testing.T) {
	var h Head
	h.Unwritten(entries("1", "2"))
	changed := entries("1", "2", "3")
	changed[1].Value = []byte("other")
	for _, es := range [][]sessions.Entry{entries("2", "3"), entries("1"), changed} {
		if got := h.Rest(es); len(got) != len(es) {
			t.Errorf("Rest(%v) = %v, want all", keysOf(es), keysOf(got))
		}
	}
}

// A record handed on and not written is the same record when its value
// is filled in meanwhile (one queued unencoded: importer/internal/
// unencoded): it is not handed on again. A session row whose value
// differs is another entry.
func TestHeadKnowsARecordByItsKey(t *testing.T) {
	rec := sessions.Entry{Key: keys.AppendRecord(nil, "step", 7, 3), Value: []byte{0}}
	row := sessions.Entry{Key: keys.AppendRecord(nil, keys.SessionsKind, 7, 0), Value: []byte("row")}
	var h Head
	h.Unwritten([]sessions.Entry{row, rec})
	filled := []sessions.Entry{row, {Key: rec.Key, Value: []byte("the record's value")}}
	if got := h.Rest(filled); len(got) != 0 {
		t.Errorf("a record filled in after it was handed on: Rest = %v, want none", keysOf(got))
	}
	other := []sessions.Entry{{Key: row.Key, Value: []byte("another row")}, rec}
	if got := h.Rest(other); len(got) != 2 {
		t.Errorf("a session row changed: Rest = %v, want both", keysOf(got))
	}
}
