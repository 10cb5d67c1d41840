package explain_test

import (
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestDiffHoldsLongValuesShort: a diff holds a long attribute value as its
// start, length and digest, not whole (issue 22: records diff of a store of
// 4 MiB values held 500 MB), and still tells values that differ only in
// their last byte apart.
func TestDiffHoldsLongValuesShort(t *testing.T) {
	long := strings.Repeat("v", 1<<20)
	side := func(winner string) *explain.Side {
		mem := sessions.NewMemStore()
		e := testsupport.RecordEntry(t, "autotune", sessions.Stamp{Session: 1}, sessions.Record{
			Name: "tune", Attributes: sessions.Attrs{str("autotune.key", "matmul"), str("winner", winner)},
		})
		if err := mem.Write([]sessions.Entry{e}); err != nil {
			t.Fatal(err)
		}
		s, err := explain.Match{}.Read(sessions.NewRecords(mem), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, same, other := side(long+"a"), side(long+"a"), side(long+"b")
	if c := explain.Diff(a, same); len(c.Keys) != 1 || c.Keys[0].Change != explain.Same || len(c.Keys[0].Differences) != 0 {
		t.Errorf("equal long values: %+v", c.Keys)
	}
	c := explain.Diff(a, other)
	if len(c.Keys) != 1 || len(c.Keys[0].Differences) != 1 {
		t.Fatalf("long values differing in their last byte: %+v", c.Keys)
	}
	held, _ := c.Keys[0].A.Attributes.Get("winner")
	if s := held.AsString(); len(s) > 2<<10 || !strings.Contains(s, "bytes, sha256 ") {
		t.Errorf("held a value of %d bytes as %d bytes (%.40q...)", len(long)+1, len(s), s)
	}
}
