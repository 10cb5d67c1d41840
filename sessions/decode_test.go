package sessions

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/recordtags"
)

// withoutNaN returns v with every NaN of its attributes replaced by
// nanStandIn, so that reflect.DeepEqual compares them; nil and empty sets
// and slices stay as they are.
func withoutNaN(v Stamped[Record]) Stamped[Record] {
	r := &v.Record
	r.Attributes = attrsWithoutNaN(r.Attributes)
	r.Events = append([]Event(nil), r.Events...)
	for i := range r.Events {
		r.Events[i].Attributes = attrsWithoutNaN(r.Events[i].Attributes)
	}
	r.Links = append([]Link(nil), r.Links...)
	for i := range r.Links {
		r.Links[i].Attributes = attrsWithoutNaN(r.Links[i].Attributes)
	}
	return v
}

func attrsWithoutNaN(a Attrs) Attrs {
	if a == nil {
		return nil
	}
	out := make(Attrs, len(a))
	for i, kv := range a {
		out[i] = Attr{kv.Key, kv.Value}
		switch x := kv.Value.v.(type) {
		case float64:
			out[i].Value = comparable(kv.Value)
		case []float64:
			if len(x) > 0 {
				out[i].Value = comparable(kv.Value)
			}
		}
	}
	return out
}

// decodeSeeds are values of every shape the hand-written decoder reads,
// and values a little off it: records as writers store them, then cut
// short, then with each byte changed.
func decodeSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	add := func(v Stamped[Record]) {
		b, err := appendRecord(nil, v.Stamp, &v.Record)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	add(everyKind())
	add(Stamped[Record]{Record: Record{Name: "x", Attributes: Attrs{}, Events: []Event{{}}, Links: []Link{{}}, Inputs: []string{}}})
	for _, b := range [][]byte{{}, bytes.Repeat([]byte{0x01, 0x80, 0x13, 0x07}, 100), bytes.Repeat([]byte{0xff}, 100)} {
		add(fuzzRecord(b))
	}
	mark, err := hex.DecodeString("a2657374616d70a36373657100677365737369" + "6f6e1b1816c11eef4ebf80696f66667365745f6e7300667265636f7264a2646e616d656c6c6f61642077656967687473" + "6777616c6c5f6e731a00989680")
	if err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, mark)
	whole := len(seeds)
	for _, b := range seeds[:whole] {
		for _, cut := range []int{1, len(b) / 2, len(b) - 1} {
			seeds = append(seeds, b[:cut])
		}
		seeds = append(seeds, append(bytes.Clone(b), 0x00)) // a byte too many
	}
	// Each byte of the mark changed to a head that is off the writers'
	// form, or one byte more or less.
	for i := range mark {
		for _, x := range []byte{0x1f, 0x5f, 0x9f, 0xbf, 0xc0, 0xf7, mark[i] + 1, mark[i] - 1} {
			m := bytes.Clone(mark)
			m[i] = x
			seeds = append(seeds, m)
		}
	}
	return seeds
}

// FuzzDecodeRecordDifferential checks the hand-written decoder against
// the library (SPEC §4): whatever the bytes, it never panics; a value it
// decodes the library decodes too, to a deep-equal record; and
// decodeRecord, which leaves the rest to the library, fails exactly where
// the library fails.
func FuzzDecodeRecordDifferential(f *testing.F) {
	for _, b := range decodeSeeds(f) {
		f.Add(b)
	}
	// The older target's corpus, of hostile values, is this one's too.
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecodeRecord", "*"))
	for _, name := range files {
		if b, err := readCorpusValue(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ref, refErr := decodeRecordLibrary(b)
		var hand Stamped[Record]
		if decodeByHand(b, &hand) {
			if refErr != nil {
				t.Fatalf("the hand-written decoder reads a value the library refuses (%v):\n%x\n%#v", refErr, b, hand)
			}
			if !reflect.DeepEqual(withoutNaN(hand), withoutNaN(ref)) {
				t.Fatalf("the hand-written decoder and the library read\n%#v\n%#v\nfrom %x", hand, ref, b)
			}
		}
		checkTyped(t, b)
		got, err := decodeRecord(b)
		if (err == nil) != (refErr == nil) && len(b) <= maxValueSize {
			t.Fatalf("decodeRecord says %v, the library %v\n%x", err, refErr, b)
		}
		if err == nil && !reflect.DeepEqual(withoutNaN(got), withoutNaN(ref)) {
			t.Fatalf("decodeRecord and the library read\n%#v\n%#v\nfrom %x", got, ref, b)
		}
	})
}

// readCorpusValue reads the one []byte of a fuzz corpus file.
func readCorpusValue(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	_, line, _ := bytes.Cut(data, []byte("\n"))
	line = bytes.TrimSpace(line)
	line = bytes.TrimSuffix(bytes.TrimPrefix(line, []byte("[]byte(")), []byte(")"))
	s, err := strconv.Unquote(string(line))
	return []byte(s), err
}

// TestDecodeByHandReadsWhatWritersWrite checks that the hand-written
// decoder, not the library, reads the records writers store.
func TestDecodeByHandReadsWhatWritersWrite(t *testing.T) {
	for i, b := range decodeSeeds(t)[:6] {
		var v Stamped[Record]
		if !decodeByHand(b, &v) {
			t.Errorf("seed %d is left to the library:\n%x", i, b)
		}
	}
}

// typedProbe is a typed read of the attributes fuzzRecord and everyKind
// make, into fields of every kind.
type typedProbe struct {
	Name  string        `record:",name"`
	Wall  time.Duration `record:",wall"`
	S     string        `record:"s"`
	I     int8          `record:"i"`
	F     float32       `record:"f"`
	B     bool          `record:"b"`
	SS    []string      `record:"ss"`
	IS    []uint16      `record:"is"`
	V     Value         `record:"fs"`
	A     any           `record:"bs"`
	K     string        `record:"k"`
	Tried int           `record:"tried"`
	E     any           `record:"a"`
}

// checkTyped checks that a typed read, which decodes only what its fields
// take (decodeFor), fails and fills as a typed read of the whole record.
func checkTyped(t *testing.T, b []byte) {
	t.Helper()
	plan, err := recordtags.For(reflect.TypeFor[typedProbe](), valueType)
	if err != nil {
		t.Fatal(err)
	}
	var lazy, whole typedProbe
	var rec Stamped[Record]
	lazyErr := decodeFor(plan, b, &rec, nil)
	if lazyErr == nil {
		lazyErr = fillStruct(plan, reflect.ValueOf(&lazy).Elem(), &rec.Record)
	}
	full, wholeErr := decodeRecord(b)
	if wholeErr == nil {
		wholeErr = fillStruct(plan, reflect.ValueOf(&whole).Elem(), &full.Record)
	}
	if (lazyErr == nil) != (wholeErr == nil) {
		t.Fatalf("a typed read says %v, of the whole record %v\n%x", lazyErr, wholeErr, b)
	}
	// Printed, NaNs compare equal.
	if l, w := fmt.Sprintf("%#v %v", lazy, rec.Stamp), fmt.Sprintf("%#v %v", whole, full.Stamp); lazyErr == nil && l != w {
		t.Fatalf("a typed read fills\n%s\nof the whole record\n%s", l, w)
	}
}
