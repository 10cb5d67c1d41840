package summary

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/otelrecords/otelrecords/sessions"
)

func TestCutText(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 4, "abcd… [8 bytes cut]"},
		{"ééé", 3, "é… [4 bytes cut]"}, // not in the middle of a character
	} {
		got, cut := Cut(c.in, c.n)
		if got != c.want || cut != (got != c.in) {
			t.Errorf("Cut(%q, %d) = %q, %v; want %q", c.in, c.n, got, cut, c.want)
		}
	}
}

// TestCompactRecordKeepsOnlyItself: a tree of compacted records holds
// their names, not the values they were read from (a decoded record's
// strings are pieces of one copy of its value), and a huge name is cut.
func TestCompactRecordKeepsOnlyItself(t *testing.T) {
	value := strings.Repeat("v", 1<<20) + "step"
	rec := sessions.Record{
		Name:       value[len(value)-4:],
		Attributes: sessions.Attrs{{Key: "payload", Value: sessions.StringValue(value[:1<<20])}},
		Status:     sessions.Status{Code: "error", Description: value[:10]},
		Inputs:     []string{},
	}
	got := Compact(rec)
	if got.Name != "step" || unsafe.StringData(got.Name) == unsafe.StringData(rec.Name) {
		t.Errorf("name %q shares the value it was read from", got.Name)
	}
	if unsafe.StringData(got.Status.Description) == unsafe.StringData(value) {
		t.Error("status description shares the value it was read from")
	}
	if got.Attributes != nil || got.Inputs == nil {
		t.Errorf("attributes %v, inputs %v: want none, and an empty list kept", got.Attributes, got.Inputs)
	}
	long := Compact(sessions.Record{Name: strings.Repeat("n", 2*HeldNameMax)}).Name
	if len(long) > HeldNameMax+64 || !strings.HasSuffix(long, fmt.Sprintf("[%d bytes cut]", HeldNameMax)) {
		t.Errorf("a name of %d bytes held as %d bytes", 2*HeldNameMax, len(long))
	}
}
