package tally_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

func encode(t testing.TB, name string, wall time.Duration, attrs sessions.Attrs) []byte {
	t.Helper()
	v, err := recorder.AppendEncoded(nil, "cache", sessions.Stamp{Session: 1 << 60, Seq: 1 << 40, Offset: 1 << 50}, &sessions.Record{
		Name: name, Wall: wall, Attributes: attrs,
		Events: []sessions.Event{{Name: "e", Attributes: sessions.Attrs{{Key: "x", Value: sessions.Int64Value(1)}}}},
		Status: sessions.Status{Code: "ok"}, SpanID: [8]byte{1}, TraceID: [16]byte{2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// What a tally reads of a record: its name, duration, key attributes (cut),
// outcome; and its encoding decodes to the same.
func TestCounterReadsRecords(t *testing.T) {
	c := tally.New()
	long := strings.Repeat("é", 200)
	for i := range 5 {
		c.Add([]byte("cache"), encode(t, "lookup", time.Duration(i+1)*time.Millisecond, sessions.Attrs{
			{Key: "a.key", Value: sessions.StringValue(long)},
			{Key: "key", Value: sessions.Int64Value(3)},
			{Key: "other", Value: sessions.StringValue("x")},
			{Key: "result", Value: sessions.BoolValue(i%2 == 0)},
		}))
	}
	c.AddMark("GET /", 2*time.Second)
	b, err := c.Tally(9, 4).MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tallies.Decode(b)
	if err != nil || len(tl.Entries) != 2 || tl.Session != 9 || tl.Part != 4 || c.Changed() {
		t.Fatalf("tally %+v, %v", tl, err)
	}
	e := tl.Entries[0]
	k, _ := e.Key.Get("a.key")
	if e.Kind != "cache" || e.Name != "lookup" || e.Count != 5 || e.Wall != 15*time.Millisecond || e.Min != time.Millisecond ||
		e.Max != 5*time.Millisecond || len(e.Key) != 2 || len(k.AsString()) != 256 || e.Outcomes["true"] != 3 || e.Outcomes["false"] != 2 {
		t.Fatalf("entry %+v", e)
	}
	if m := tl.Entries[1]; m.Kind != sessions.MarksKind || m.Name != "GET /" || m.Count != 1 || m.Max != 2*time.Second {
		t.Fatalf("mark %+v", m)
	}
}

// Counting a key seen before allocates nothing.
func TestCounterRepeatsAllocateNothing(t *testing.T) {
	c := tally.New()
	v := encode(t, "lookup", time.Millisecond, sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue("k1")}, {Key: "cache.result", Value: sessions.StringValue("hit")}})
	kind := []byte("cache")
	c.Add(kind, v)
	c.AddMark("GET /", time.Second)
	if n := testing.AllocsPerRun(1000, func() { c.Add(kind, v); c.AddMark("GET /", time.Millisecond) }); n != 0 {
		t.Fatalf("%v allocations a repeat, want 0", n)
	}
}

// 10,000 distinct keys stay within the bounds; the rest are summed and
// every record is counted.
func TestCounterBounds(t *testing.T) {
	c := tally.New()
	const n = 10_000
	c.AddMark("a mark", time.Second)
	c.Add([]byte("ab"), encode(t, "z", time.Millisecond, nil))
	for i := range n {
		c.Add([]byte("cache"), encode(t, "lookup", time.Millisecond, sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue(fmt.Sprintf("key-%d-%s", i, strings.Repeat("x", 100)))}}))
	}
	b, err := c.Tally(1, 1).MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tallies.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(tl.Entries, tallies.Entry.Compare) {
		t.Error("entries not in Compare's order")
	}
	own, rest := -2, 0 // the mark's and "ab"'s are no cache keys
	for _, e := range tl.Entries {
		if e.Rest {
			rest++
		} else {
			own++
		}
	}
	if len(b) > tallies.MaxBytes || own > tallies.MaxKeys || rest != 1 || tl.Count() != n+2 || tl.Over != int64(n-own) {
		t.Fatalf("%d bytes, %d keys, %d rests, count %d, over %d", len(b), own, rest, tl.Count(), tl.Over)
	}
	t.Logf("%d bytes, %d keys on their own", len(b), own)
}

func BenchmarkCounterAdd(b *testing.B) {
	c := tally.New()
	v := encode(b, "lookup", time.Millisecond, sessions.Attrs{{Key: "cache.key", Value: sessions.StringValue("k1")}, {Key: "cache.result", Value: sessions.StringValue("hit")}, {Key: "a", Value: sessions.Int64Value(1)}, {Key: "b", Value: sessions.StringValue("xyz")}})
	kind := []byte("cache")
	b.ReportAllocs()
	for b.Loop() {
		c.Add(kind, v)
	}
}

// warmRecords returns 1,024 records shaped as bench's warm spans are (a
// key among 1,024, three other attributes, a scope, inputs and ids), and
// the hint of each, as the plain encoder notes it.
func warmRecords(b *testing.B) ([][]byte, []tally.Hint) {
	var vs [][]byte
	var hs []tally.Hint
	at := func(v []byte, key string) uint32 {
		i := bytes.Index(v, append([]byte{0x60 | byte(len(key))}, key...))
		if i < 0 {
			b.Fatalf("no %s in %x", key, v)
		}
		return uint32(i + 1 + len(key))
	}
	for i := range 1024 {
		v, err := recorder.AppendEncoded(nil, "autotune", sessions.Stamp{Session: 1 << 60, Seq: uint64(i) << 20, Offset: 1 << 40}, &sessions.Record{
			Name: "workload", Wall: 3 * time.Microsecond, Scope: sessions.Scope{Name: "bench"},
			Attributes: sessions.Attrs{{Key: "key", Value: sessions.StringValue(fmt.Sprint("k", i))}, {Key: "n", Value: sessions.Int64Value(int64(i))}, {Key: "ok", Value: sessions.BoolValue(true)}},
			Inputs:     []string{"key", "n", "ok"}, SpanID: [8]byte{1, 2}, TraceID: [16]byte{3}, SpanKind: "internal",
		})
		if err != nil {
			b.Fatal(err)
		}
		vs = append(vs, v)
		hs = append(hs, tally.Hint{Name: at(v, "name"), Attrs: at(v, "attrs"), Wall: at(v, "wall_ns")})
	}
	return vs, hs
}

// BenchmarkCounterAddWarm counts a warm span's record (warmRecords) by
// walking its value, as every record let go was counted before the
// encoder noted hints (and a record without one still is).
func BenchmarkCounterAddWarm(b *testing.B) {
	benchmarkWarm(b, false)
}

// BenchmarkCounterAddWarmHinted counts it from its hint: what a warm
// session pays now for each record its budget lets go.
func BenchmarkCounterAddWarmHinted(b *testing.B) {
	benchmarkWarm(b, true)
}

func benchmarkWarm(b *testing.B, hinted bool) {
	c := tally.New()
	vs, hs := warmRecords(b)
	kind := []byte("autotune")
	add := func(i int) {
		if hinted {
			c.AddHinted(kind, vs[i], hs[i])
		} else {
			c.Add(kind, vs[i])
		}
	}
	for i := range vs { // each key seen once: the loop counts only keys it has
		if !hinted {
			c.Add(kind, vs[i])
		} else if !c.AddHinted(kind, vs[i], hs[i]) {
			b.Fatalf("the hint of record %d does not fit", i)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		add(i % len(vs))
	}
}
