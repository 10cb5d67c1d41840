package cborwire_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/otelrecords/otelrecords/internal/ground/cborwire"
)

func TestIntsReadBack(t *testing.T) {
	for _, n := range edges() {
		for _, i := range []int64{int64(n), -int64(n)} {
			r := cborwire.NewReader(cborwire.AppendInt(nil, i))
			h, ok := r.Head()
			got, okInt := h.Int()
			if !ok || !okInt || got != i || r.Len() != 0 {
				t.Fatalf("%d read back as %d (%v %v), %d bytes left", i, got, ok, okInt, r.Len())
			}
		}
		r := cborwire.NewReader(cborwire.AppendUint(nil, n))
		h, _ := r.Head()
		if h.Major != cborwire.MajorUint || h.Arg != n {
			t.Fatalf("%d read back as %+v", n, h)
		}
		if _, ok := h.Int(); ok != (n <= math.MaxInt64) {
			t.Fatalf("%d: Int says %v", n, ok)
		}
	}
	// Heads not in their shortest form read as the same argument.
	for _, b := range [][]byte{{0x18, 0x05}, {0x19, 0, 5}, {0x1a, 0, 0, 0, 5}, {0x1b, 0, 0, 0, 0, 0, 0, 0, 5}} {
		r := cborwire.NewReader(b)
		if h, ok := r.Head(); !ok || h.Arg != 5 || r.Len() != 0 {
			t.Fatalf("%x read as %+v %v", b, h, ok)
		}
	}
}

// TestFloatsReadAsLibrary reads every half, and random singles and
// doubles, as the library decodes them into a float64, to the bit.
func TestFloatsReadAsLibrary(t *testing.T) {
	var items [][]byte
	for h := range 1 << 16 {
		items = append(items, []byte{0xf9, byte(h >> 8), byte(h)})
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		items = append(items, appendBits([]byte{0xfa}, uint64(rng.Uint32()), 4), appendBits([]byte{0xfb}, rng.Uint64(), 8))
	}
	for _, b := range items {
		var want any
		if err := cbor.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		r := cborwire.NewReader(b)
		h, ok := r.Head()
		got, okF := h.Float()
		if !ok || !okF || math.Float64bits(got) != math.Float64bits(want.(float64)) {
			t.Fatalf("%x read as %v (%x), the library %v (%x)", b, got, math.Float64bits(got), want, math.Float64bits(want.(float64)))
		}
	}
}

func appendBits(b []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func TestReaderStopsAtTheEnd(t *testing.T) {
	for _, b := range [][]byte{{}, {0x18}, {0x19, 0}, {0x1a, 0, 0, 0}, {0x1b, 0, 0, 0, 0, 0, 0, 0}, {0x1c}, {0x1d}, {0x1e}} {
		r := cborwire.NewReader(b)
		if h, ok := r.Head(); ok || r.Offset() != 0 {
			t.Fatalf("%x read as %+v, at %d", b, h, r.Offset())
		}
	}
	r := cborwire.NewReader([]byte{0x63, 'a', 'b'})
	if s, ok := r.String(cborwire.MajorText); ok || r.Offset() != 0 {
		t.Fatalf("a text string cut short read as %q", s)
	}
	r = cborwire.NewReader([]byte{0x7f, 0x61, 'a', 0xff})
	if _, ok := r.String(cborwire.MajorText); ok || r.Offset() != 0 {
		t.Fatal("an indefinite text string read as a definite one")
	}
	r = cborwire.NewReader([]byte{0x42, 1, 2, 0x61, 'a'})
	if _, ok := r.String(cborwire.MajorText); ok {
		t.Fatal("a byte string read as text")
	}
	if b, ok := r.String(cborwire.MajorBytes); !ok || string(b) != "\x01\x02" {
		t.Fatalf("byte string read as %x %v", b, ok)
	}
	if s, ok := r.String(cborwire.MajorText); !ok || string(s) != "a" || r.Len() != 0 {
		t.Fatalf("text read as %q %v", s, ok)
	}
	if h, ok := (&cborwire.Reader{}).Head(); ok {
		t.Fatalf("the zero Reader read %+v", h)
	}
}

func TestReadingAllocatesNothing(t *testing.T) {
	b := cborwire.AppendText(cborwire.AppendFloat(cborwire.AppendInt(nil, -300), 1.1), "name")
	allocs := testing.AllocsPerRun(100, func() {
		r := cborwire.NewReader(b)
		h, _ := r.Head()
		h.Int()
		h, _ = r.Head()
		h.Float()
		r.String(cborwire.MajorText)
	})
	if allocs != 0 {
		t.Fatalf("reading allocated %v times", allocs)
	}
}
