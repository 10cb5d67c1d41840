package sessions

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
)

// fuzzBytes hands out a fuzzer's bytes as the parts of a record; past
// its end, every part is zero.
type fuzzBytes []byte

func (f *fuzzBytes) byte() byte {
	if len(*f) == 0 {
		return 0
	}
	b := (*f)[0]
	*f = (*f)[1:]
	return b
}

func (f *fuzzBytes) uint64() uint64 {
	var b [8]byte
	n := copy(b[:], *f)
	*f = (*f)[n:]
	return binary.BigEndian.Uint64(b[:])
}

// small returns a number from 0 to n-1.
func (f *fuzzBytes) small(n int) int { return int(f.byte()) % n }

// int returns an integer of any width and sign, small ones most often.
func (f *fuzzBytes) int() int64 {
	n := int64(f.uint64())
	return n >> f.small(64)
}

// keys are the attribute keys records are built of, few enough to repeat:
// a later duplicate must win.
var fuzzKeys = []string{"", "a", "b", "ab", "k", "tried", "autotune.key", "records.invalid_kind", "é", "\xff", "aaaaaaaaaaaaaaaaaaaaaaaaa"}

func (f *fuzzBytes) text() string {
	if f.small(4) == 0 {
		return fuzzKeys[f.small(len(fuzzKeys))]
	}
	n := min(f.small(40), len(*f))
	s := string((*f)[:n])
	*f = (*f)[n:]
	return s
}

func (f *fuzzBytes) float() float64 {
	switch f.small(4) {
	case 0:
		return math.Float64frombits(f.uint64())
	case 1:
		return float64(math.Float32frombits(uint32(f.uint64())))
	case 2:
		return float64(f.int()) / 4
	}
	return []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0x1p-24, 65504, 1e300}[f.small(7)]
}

func (f *fuzzBytes) value() Value {
	n := f.small(20)
	switch f.small(10) {
	case 0:
		return Value{}
	case 1:
		return BoolValue(f.byte()&1 == 1)
	case 2:
		return Int64Value(f.int())
	case 3:
		return Float64Value(f.float())
	case 4:
		return StringValue(f.text())
	case 5:
		return SliceValue(fill(n, func() bool { return f.byte()&1 == 1 }))
	case 6:
		return SliceValue(fill(n, f.int))
	case 7:
		return SliceValue(fill(n, f.float))
	case 8:
		return SliceValue(fill(n, f.text))
	}
	return Value{[]string{}}
}

// fill returns n of what one makes; nil for none, half the time.
func fill[T any](n int, one func() T) []T {
	if n == 0 && one != nil {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = one()
	}
	return out
}

// attrs returns nil, an empty set, or up to 20 attributes (more than
// appendAttrs sorts on its stack).
func (f *fuzzBytes) attrs() Attrs {
	switch n := f.small(24); n {
	case 0:
		return nil
	case 1:
		return Attrs{}
	default:
		return fill(n-1, func() Attr { return Attr{f.text(), f.value()} })
	}
}

func (f *fuzzBytes) ids() (TraceID, SpanID) {
	var t TraceID
	var s SpanID
	if f.byte()&1 == 1 {
		binary.BigEndian.PutUint64(t[:], f.uint64())
		binary.BigEndian.PutUint64(t[8:], f.uint64())
	}
	if f.byte()&1 == 1 {
		binary.BigEndian.PutUint64(s[:], f.uint64())
	}
	return t, s
}

// fuzzRecord builds a stamped record from a fuzzer's bytes, every field
// of it and every kind of value reachable.
func fuzzRecord(b []byte) Stamped[Record] {
	f := fuzzBytes(b)
	var v Stamped[Record]
	v.Stamp = Stamp{Session: SessionID(f.uint64()), Seq: f.uint64() >> f.small(64), Offset: time.Duration(f.int())}
	r := &v.Record
	r.Name = f.text()
	r.Wall = time.Duration(f.int())
	r.Attributes = f.attrs()
	r.Status = Status{Code: f.text(), Description: f.text()}
	r.Events = fill(f.small(5), func() Event {
		return Event{Name: f.text(), Offset: time.Duration(f.int()), Attributes: f.attrs()}
	})
	r.TraceID, r.SpanID = f.ids()
	_, r.ParentSpanID = f.ids()
	r.Scope = Scope{Name: f.text(), Version: f.text()}
	r.SpanKind = f.text()
	r.TraceState = f.text()
	r.Links = fill(f.small(5), func() Link {
		l := Link{TraceState: f.text(), Attributes: f.attrs()}
		l.TraceID, l.SpanID = f.ids()
		return l
	})
	r.DroppedAttributes, r.DroppedEvents, r.DroppedLinks = int(f.int()), int(f.int()), int(f.int())
	r.Effect = Effect(f.small(4))
	switch f.small(3) {
	case 0:
		r.Inputs = []string{}
	case 1:
		r.Inputs = fill(f.small(5)+1, f.text)
	}
	return v
}

// stored returns the record a reader gets back from v's value, as the
// library reads it: attributes sorted by key with the last of a duplicate
// kept, empty arrays and lists of events or links left out, an effect
// other than Changed observed, an empty array a string array. NaNs are
// replaced by a number, so that reflect.DeepEqual compares them.
func stored(v Stamped[Record]) Stamped[Record] {
	r := &v.Record
	r.Attributes = storedAttrs(r.Attributes)
	if len(r.Events) == 0 {
		r.Events = nil
	}
	for i := range r.Events {
		r.Events[i].Attributes = storedAttrs(r.Events[i].Attributes)
	}
	if len(r.Links) == 0 {
		r.Links = nil
	}
	for i := range r.Links {
		r.Links[i].Attributes = storedAttrs(r.Links[i].Attributes)
	}
	if r.Effect != Changed {
		r.Effect = Observed
	}
	return v
}

func storedAttrs(a Attrs) Attrs {
	if a == nil {
		return nil
	}
	out := Attrs{}
	for i, kv := range a {
		if slices.ContainsFunc(a[i+1:], func(later Attr) bool { return later.Key == kv.Key }) {
			continue
		}
		out = append(out, Attr{kv.Key, comparable(kv.Value)})
	}
	sortAttrs(out)
	return out
}

// nanStandIn replaces NaN where reflect.DeepEqual compares values.
const nanStandIn = -0x1.23456789abcdep-1000

// comparable returns v with NaNs replaced, and an empty array of any type
// as a string array, as it reads back.
func comparable(v Value) Value {
	nan := func(f float64) float64 {
		if f != f {
			return nanStandIn
		}
		return f
	}
	switch x := v.v.(type) {
	case float64:
		return Value{nan(x)}
	case []float64:
		if len(x) > 0 {
			out := make([]float64, len(x))
			for i, f := range x {
				out[i] = nan(f)
			}
			return Value{out}
		}
	}
	if reflect.ValueOf(v.v).Kind() == reflect.Slice && reflect.ValueOf(v.v).Len() == 0 {
		return Value{[]string{}}
	}
	return v
}

// FuzzEncodeRecordDifferential checks the hand-written encoder against
// the library (SPEC §4): for records built from the fuzzer's bytes it
// writes the library's bytes to the byte, and the library reads them back
// to the record the writer meant.
func FuzzEncodeRecordDifferential(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 200))
	f.Add(bytes.Repeat([]byte{0x01, 0x80, 0x13, 0x07}, 100))
	f.Add([]byte("\x00\x00\x00\x01\x00\x00\x00\x02seq and session; then a name, attributes and the rest of a record"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v := fuzzRecord(b)
		hand, err := appendRecord([]byte("prefix"), v.Stamp, &v.Record)
		if err != nil {
			t.Fatalf("the hand-written encoder fails: %v\n%#v", err, v)
		}
		if !bytes.HasPrefix(hand, []byte("prefix")) {
			t.Fatalf("appendRecord lost what dst held: %q", hand)
		}
		hand = hand[len("prefix"):]
		ref, err := encodeRecordLibrary(v.Stamp, &v.Record)
		if err != nil {
			t.Fatalf("the library fails: %v", err)
		}
		if !bytes.Equal(hand, ref) {
			t.Fatalf("the hand-written encoder and the library differ:\n%x\n%x\n%#v", hand, ref, v)
		}
		back, err := decodeRecordLibrary(hand)
		if err != nil {
			t.Fatalf("the library cannot read what the hand-written encoder wrote: %v\n%x", err, hand)
		}
		if want := stored(v); !reflect.DeepEqual(stored(back), want) {
			t.Fatalf("the library reads back\n%#v\nwant\n%#v", stored(back), want)
		}
	})
}

func TestEncodeRecordAllocatesNothing(t *testing.T) {
	v := everyKind()
	buf := make([]byte, 0, 64<<10)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := appendRecord(buf[:0], v.Stamp, &v.Record); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("appendRecord allocated %v times", allocs)
	}
	hand, _ := appendRecord(nil, v.Stamp, &v.Record)
	if ref, err := encodeRecordLibrary(v.Stamp, &v.Record); err != nil || !bytes.Equal(hand, ref) {
		t.Fatalf("the hand-written encoder and the library differ:\n%x\n%x (%v)", hand, ref, err)
	}
	// The race detector makes sync.Pool drop items at random, so only a
	// normal build can count on the pooled buffer.
	if allocs := testing.AllocsPerRun(100, func() { encodeRecord(v.Stamp, &v.Record) }); allocs != 1 && !raceEnabled {
		t.Fatalf("encodeRecord allocated %v times, want 1: the value", allocs)
	}
}

// everyKind is a record with every field set and every kind of value, in
// sets of at most 16 (which appendAttrs sorts on its stack).
func everyKind() Stamped[Record] {
	a := Attrs{
		{"s", StringValue("tiled")}, {"i", Int64Value(-1 << 40)}, {"f", Float64Value(1.5)}, {"b", BoolValue(true)},
		{"ss", SliceValue([]string{"a", "b"})}, {"is", SliceValue([]int64{1, 300})},
		{"fs", SliceValue([]float64{0.1, math.NaN()})}, {"bs", SliceValue([]bool{false})},
		{"empty", Value{}}, {"none", SliceValue[string](nil)}, {"s", StringValue("again")},
	}
	return Stamped[Record]{
		Stamp: Stamp{Session: 1735787045006000000, Seq: 7, Offset: -3 * time.Millisecond},
		Record: Record{
			Name: "tune matmul", Wall: 5 * time.Millisecond, Attributes: a,
			Status:  Status{Code: "error", Description: "simd failed"},
			Events:  []Event{{Name: "candidate", Offset: 1, Attributes: a}, {Name: "none"}},
			TraceID: TraceID{0: 0x4b, 15: 0xf9}, SpanID: SpanID{0: 1, 7: 2}, ParentSpanID: SpanID{7: 1},
			Scope:    Scope{Name: "example.com/tuner", Version: "v0.1.0"},
			SpanKind: "server", TraceState: "vendor=a",
			Links:             []Link{{TraceID: TraceID{15: 9}, SpanID: SpanID{7: 9}, TraceState: "l=1", Attributes: a}, {}},
			DroppedAttributes: 2, DroppedEvents: -3, DroppedLinks: 1 << 40,
			Effect: Changed, Inputs: []string{"s", "i"},
		},
	}
}

// TestAppendCBOR checks that AppendCBOR appends exactly MarshalCBOR's
// bytes after what dst held, without an allocation when dst has room, and
// that a record that cannot be encoded leaves dst as it was.
func TestAppendCBOR(t *testing.T) {
	v := everyKind()
	want, err := v.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	dst := append(make([]byte, 0, 64<<10), "prefix"...)
	got, err := v.AppendCBOR(dst)
	if err != nil || string(got[:6]) != "prefix" || !bytes.Equal(got[6:], want) {
		t.Fatalf("AppendCBOR = %x, %v; want prefix then %x", got, err, want)
	}
	if allocs := testing.AllocsPerRun(100, func() { v.AppendCBOR(dst) }); allocs != 0 {
		t.Errorf("AppendCBOR into a buffer with room allocated %v times", allocs)
	}
	bad := v
	bad.Record.Attributes = Attrs{{"k", Value{v: struct{}{}}}} // no CBOR form
	if got, err := bad.AppendCBOR(dst); err == nil || !bytes.Equal(got, dst) {
		t.Errorf("AppendCBOR of an unencodable record = %q, %v; want dst unchanged and an error", got, err)
	}
	other, err := Stamped[map[string]int]{Record: map[string]int{"a": 1}}.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := (Stamped[map[string]int]{Record: map[string]int{"a": 1}}).AppendCBOR(dst); err != nil || !bytes.Equal(got[6:], other) {
		t.Errorf("AppendCBOR of another record type = %x, %v; want %x", got[6:], err, other)
	}
}
