package sessions

import (
	"runtime"
	"strings"
	"testing"
)

// TestKeptNameDoesNotKeepHugeValue: a reader that keeps only the names of
// records with huge attribute values (a tree, a table of the slowest
// records) holds the names, not the values (issue 22: records timeline
// held every byte of a 250 MB store's sessions through their names).
func TestKeptNameDoesNotKeepHugeValue(t *testing.T) {
	const n, size = 32, 1 << 20
	huge := strings.Repeat("x", size)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	names := make([]string, 0, n)
	for i := range n {
		b, err := Stamped[Record]{Stamp: Stamp{Session: 1, Seq: uint64(i)}, Record: Record{
			Name:       "step",
			Attributes: Attrs{{Key: "payload", Value: StringValue(huge)}},
		}}.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		var v Stamped[Record]
		if !decodeByHand(b, &v) {
			t.Fatal("decodeByHand refused what a writer wrote")
		}
		if got, _ := v.Record.Attributes.Get("payload"); got.AsString() != huge {
			t.Fatal("payload not decoded whole")
		}
		names = append(names, v.Record.Name)
	}
	after := heap()
	runtime.KeepAlive(names)
	if held := int64(after) - int64(before); held > n*size/4 {
		t.Errorf("keeping %d names held %d MiB: their records' values are still alive", n, held>>20)
	}
}
