package sessions_test

import (
	"bytes"
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// heapAllocated reads the bytes the process has allocated so far, without
// stopping the world: close enough to measure a decode against a budget
// of 64 KiB and more.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocatedBy returns the bytes f allocates on the heap, the least of
// three runs: the counter is the process's, and a background goroutine
// (a store another test closed, the race detector's own) can add to one
// run, never take from it, so an allocation f really makes shows in all
// three.
func allocatedBy(f func()) uint64 {
	least := ^uint64(0)
	for range 3 {
		before := heapAllocated()
		f()
		least = min(least, heapAllocated()-before)
	}
	return least
}

// CBOR heads.
func arrayOf(n int) []byte { return []byte{0x9a, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }
func mapOf(n int) []byte   { return []byte{0xba, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

// recordWith returns a record value whose body holds one field, name, with
// the item given: {"stamp": {}, "record": {name: item}}.
func recordWith(name string, item []byte) []byte {
	b := []byte{0xa2, 0x65, 's', 't', 'a', 'm', 'p', 0xa0, 0x66, 'r', 'e', 'c', 'o', 'r', 'd', 0xa1, 0x60 + byte(len(name))}
	return append(append(b, name...), item...)
}

// attrsOfArrays returns attributes, as a record value, of n arrays of
// elements each elem.
func attrsOfArrays(elem []byte, size int) []byte {
	per := min(1<<20, size/len(elem))
	n := max(1, size/(per*len(elem)))
	b := mapOf(n)
	for i := range n {
		b = append(b, 0x62, 'k', byte('a'+i))
		b = append(b, arrayOf(per)...)
		b = append(b, bytes.Repeat(elem, per)...)
	}
	return recordWith("attrs", b)
}

// decodeShape is a value to decode, and whether a writer may store it.
type decodeShape struct {
	name  string
	value []byte
	legal bool // written by the Recorder, so it must decode
	row   bool // a session row rather than a record
}

// decodeShapes returns values of about size bytes that make the decoder
// allocate the most per byte: hostile ones (nothing a writer stores) and
// the costliest a writer may store.
func decodeShapes(t testing.TB, size int) []decodeShape {
	record := func(rec sessions.Record) []byte {
		v, err := encodeRecord(sessions.Stamped[sessions.Record]{Stamp: sessions.Stamp{Session: 1}, Record: rec})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// 2^17 distinct keys, the shortest they can be.
	key := func(i int) string {
		switch {
		case i < 256:
			return string([]byte{byte(i)})
		case i < 256+65536:
			i -= 256
			return string([]byte{byte(i >> 8), byte(i)})
		}
		i -= 256 + 65536
		return string([]byte{0, byte(i >> 8), byte(i)})
	}
	attrs := func(n int, v sessions.Value) []byte {
		a := make(sessions.Attrs, 0, n)
		for i := range n {
			a = append(a, sessions.Attr{Key: key(i), Value: v})
		}
		return record(sessions.Record{Attributes: a})
	}
	manyAttrs := func(v sessions.Value) []byte { return attrs(min(1<<17, size/4), v) }
	events := func(attrs sessions.Attrs, each int) []byte {
		ev := make([]sessions.Event, min(1<<20, size/each))
		for i := range ev {
			ev[i].Attributes = attrs
		}
		return record(sessions.Record{Events: ev})
	}
	row := func(n int) []byte {
		a := make(sessions.Attrs, 0, n)
		for i := range n {
			a = append(a, sessions.Attr{Key: key(i), Value: sessions.SliceValue[string](nil)})
		}
		v, err := encodeSession(sessions.Session{ID: 1, Resource: a})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	emptyMaps := min(1<<20, size)
	hostileEvents := append(arrayOf(emptyMaps), bytes.Repeat([]byte{0xa0}, emptyMaps)...)
	return []decodeShape{
		// Hostile: items a record never holds, each as small as it can be.
		{name: "attribute arrays of empty maps", value: attrsOfArrays([]byte{0xa0}, size)},
		{name: "attribute arrays of maps of one pair", value: attrsOfArrays([]byte{0xa1, 0, 0}, size)},
		{name: "attribute arrays of maps of nine pairs", value: attrsOfArrays([]byte{0xa9, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0}, size)},
		{name: "attribute arrays of empty arrays", value: attrsOfArrays([]byte{0x80}, size)},
		{name: "attribute arrays of arrays of an array", value: attrsOfArrays([]byte{0x81, 0x80}, size)},
		{name: "attribute arrays of empty byte strings", value: attrsOfArrays([]byte{0x40}, size)},
		{name: "attribute arrays of tagged zeros", value: attrsOfArrays([]byte{0xc6, 0x00}, size)},
		{name: "attribute arrays of times", value: attrsOfArrays([]byte{0xc1, 0x00}, size)},
		{name: "attribute arrays of big integers", value: attrsOfArrays([]byte{0xc2, 0x41, 0x01}, size)},
		{name: "attribute arrays of tags of tags", value: attrsOfArrays(append(bytes.Repeat([]byte{0xc6}, 12), 0), size)},
		{name: "attribute arrays of nulls", value: attrsOfArrays([]byte{0xf6}, size)},
		{name: "attribute arrays of indefinite empty maps", value: attrsOfArrays([]byte{0xbf, 0xff}, size)},
		{name: "events that are empty maps", value: recordWith("events", hostileEvents)},
		{name: "resource of arrays of empty maps", row: true, value: append([]byte{0xa1, 0x68, 'r', 'e', 's', 'o', 'u', 'r', 'c', 'e', 0xa1, 0x61, 'k'}, hostileEvents...)},
		// Legal: the costliest a writer may store.
		{name: "attribute arrays of empty strings", legal: true, value: record(sessions.Record{Attributes: sessions.Attrs{{Key: "k", Value: sessions.SliceValue(make([]string, min(1<<20, size)))}}})},
		{name: "attribute arrays of false", legal: true, value: record(sessions.Record{Attributes: sessions.Attrs{{Key: "k", Value: sessions.SliceValue(make([]bool, min(1<<20, size)))}}})},
		{name: "attribute arrays of zeros", legal: true, value: record(sessions.Record{Attributes: sessions.Attrs{{Key: "k", Value: sessions.SliceValue(make([]int64, min(1<<20, size)))}}})},
		{name: "2^17 attributes, empty arrays", legal: true, value: manyAttrs(sessions.SliceValue[string](nil))},
		{name: "2^17 attributes, arrays of an empty string", legal: true, value: manyAttrs(sessions.SliceValue([]string{""}))},
		{name: "2^17 attributes, zeros", legal: true, value: manyAttrs(sessions.Int64Value(int64(0)))},
		// A map's table is a power of two of slots, at most 7/8 full: one
		// pair past 7/8 of a power of two doubles it.
		{name: "28,673 attributes, empty arrays", legal: true, value: attrs(7<<12+1, sessions.SliceValue[string](nil))},
		{name: "2^17 attributes, one-byte strings", legal: true, value: manyAttrs(sessions.StringValue("x"))},
		{name: "events without attributes", legal: true, value: events(nil, 18)},
		{name: "events with no attributes", legal: true, value: events(sessions.Attrs{}, 25)},
		{name: "events with one attribute", legal: true, value: events(sessions.Attrs{{Key: "", Value: sessions.Int64Value(int64(0))}}, 27)},
		{name: "events with one empty array", legal: true, value: events(sessions.Attrs{{Key: "", Value: sessions.SliceValue[string](nil)}}, 27)},
		{name: "events with two attributes", legal: true, value: events(sessions.Attrs{{Key: "", Value: sessions.Int64Value(int64(0))}, {Key: "a", Value: sessions.Int64Value(int64(0))}}, 30)},
		{name: "resource of 2^17 empty arrays", legal: true, row: true, value: row(min(1<<17, size/4))},
	}
}

// TestDecodingStaysWithinBudget decodes the values that make the decoder
// allocate the most per byte, and checks that each allocates within its
// budget (docs/FORMAT.md §5: 56 times its size, plus 64 KiB), and that
// every value a writer may store decodes. Before the budget, a value of
// empty maps in an attribute allocated 64 times its size, and one of maps
// of one pair 117 times. -long decodes values of 15 MiB, the largest a
// writer stores; the default, 1 MiB.
func TestDecodingStaysWithinBudget(t *testing.T) {
	size := 1 << 20
	if raceEnabled {
		size = 128 << 10
	}
	if *long {
		size = 15 << 20
	}
	worst := 0.0
	for _, s := range decodeShapes(t, size) {
		decode := func(b []byte) error { _, err := sessions.DecodeRecord(b); return err }
		if s.row {
			decode = func(b []byte) error { _, err := sessions.DecodeSession(b); return err }
		}
		var err error
		n := allocatedBy(func() { err = decode(s.value) })
		ratio := float64(n) / float64(len(s.value))
		t.Logf("%-45s %9d bytes: %11d allocated (%5.1f a byte), %v", s.name, len(s.value), n, ratio, errString(err))
		if s.legal && err != nil {
			t.Errorf("%s: a value a writer stores does not decode: %v", s.name, err)
		}
		if int64(n) > sessions.DecodeBudget(len(s.value)) {
			t.Errorf("%s: %d bytes allocated for a value of %d, over its budget of %d", s.name, n, len(s.value), sessions.DecodeBudget(len(s.value)))
		}
		if err == nil {
			worst = max(worst, ratio)
		}
	}
	t.Logf("the most a value that decodes allocated: %.1f bytes a byte", worst)
}

func errString(err error) string {
	if err == nil {
		return "decoded"
	}
	s := err.Error()
	if i := strings.Index(s, " ("); i > 0 {
		s = s[:i]
	}
	return fmt.Sprintf("refused: %.60s", s)
}
