package cborwire_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/otelrecords/otelrecords/internal/ground/cborwire"
)

// reference is the encoder this package must match byte for byte: the
// library's core deterministic options, as package sessions sets them.
var reference = func() cbor.EncMode {
	eo := cbor.CoreDetEncOptions()
	eo.Time = cbor.TimeUnixDynamic
	em, err := eo.EncMode()
	if err != nil {
		panic(err)
	}
	return em
}()

func want(t *testing.T, v any) []byte {
	t.Helper()
	b, err := reference.Marshal(v)
	if err != nil {
		t.Fatalf("reference encoding of %#v: %v", v, err)
	}
	return b
}

func same(t *testing.T, what any, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%#v: got %x, the library writes %x", what, got, want)
	}
}

// edges are the integers around every change of a head's width.
func edges() []uint64 {
	var ns []uint64
	for _, e := range []uint64{0, 23, 24, math.MaxUint8, math.MaxUint16, math.MaxUint32, math.MaxInt64, math.MaxUint64} {
		ns = append(ns, e-1, e, e+1)
	}
	return ns
}

func TestIntsMatchLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ns := edges()
	for range 10000 {
		ns = append(ns, rng.Uint64()>>rng.IntN(64))
	}
	for _, n := range ns {
		same(t, n, cborwire.AppendUint(nil, n), want(t, n))
		i := int64(n)
		same(t, i, cborwire.AppendInt(nil, i), want(t, i))
		same(t, -i, cborwire.AppendInt(nil, -i), want(t, -i))
		// Appending keeps what dst holds.
		same(t, n, cborwire.AppendUint([]byte{0xee}, n), append([]byte{0xee}, want(t, n)...))
	}
}

func TestFloatsMatchLibrary(t *testing.T) {
	fs := []float64{
		0, math.Copysign(0, -1), 1, -1, 2, 1.5, 65504, 65505, -65504, 1e300, -1e-300,
		math.SmallestNonzeroFloat64, math.MaxFloat64, math.SmallestNonzeroFloat32, math.MaxFloat32,
		math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN(),
		math.Float64frombits(0x7ff0000000000001), // a signalling NaN
		math.Float64frombits(0xfff8000000000123), // a negative NaN with a payload
		0x1p-24, 0x1p-25, 0x1.8p-24, 0x1p-14, 0x1.ffcp-15, 0x1.ff8p-15, 0x1p-149, 0x1p-126, 0x1.4p-126,
	}
	// Every half, and the singles and doubles on either side of it.
	for h := range 1 << 16 {
		f := halfValue(uint16(h))
		f32 := float32(f)
		fs = append(fs, f, float64(math.Nextafter32(f32, float32(math.Inf(1)))),
			float64(math.Nextafter32(f32, float32(math.Inf(-1)))), math.Nextafter(f, math.Inf(1)))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		fs = append(fs, math.Float64frombits(rng.Uint64()), float64(math.Float32frombits(rng.Uint32())))
	}
	for _, f := range fs {
		same(t, f, cborwire.AppendFloat(nil, f), want(t, f))
	}
}

// halfValue is the value of half-precision bits h, by the library's
// decoding.
func halfValue(h uint16) float64 {
	var f float64
	if err := cbor.Unmarshal([]byte{0xf9, byte(h >> 8), byte(h)}, &f); err != nil {
		panic(err)
	}
	return f
}

func TestStringsMatchLibrary(t *testing.T) {
	for _, n := range []int{0, 1, 23, 24, 255, 256, 65535, 65536, 70000} {
		s := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		same(t, s, cborwire.AppendText(nil, s), want(t, s))
		b := []byte(s)
		same(t, b, cborwire.AppendBytes(nil, b), want(t, b))
	}
	bad := "\xff\xfe not UTF-8"
	same(t, bad, cborwire.AppendText(nil, bad), want(t, bad))
	same(t, true, cborwire.AppendBool(nil, true), want(t, true))
	same(t, false, cborwire.AppendBool(nil, false), want(t, false))
	same(t, nil, cborwire.AppendNull(nil), want(t, nil))
	same(t, []int{}, cborwire.AppendArrayHead(nil, 0), want(t, []int{}))
	same(t, make([]bool, 30), cborwire.AppendArrayHead(nil, 30), want(t, make([]bool, 30))[:2])
	same(t, map[string]int{}, cborwire.AppendMapHead(nil, 0), want(t, map[string]int{}))
}

// TestSortKeysMatchesLibrary encodes maps key by key in SortKeys order,
// later duplicates winning, and compares them with the library's encoding
// of the Go map the same pairs fill in order.
func TestSortKeysMatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"", "a", "b", "ab", "ba", "é", "\xff", "z", "aa", "abc", "records.kind", strings.Repeat("k", 24), strings.Repeat("k", 300)}
	for range 2000 {
		n := rng.IntN(40)
		type pair struct {
			k string
			v int
		}
		pairs := make([]pair, n)
		m := map[string]int{}
		for i := range pairs {
			k := alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(2) == 0 {
				k += alphabet[rng.IntN(len(alphabet))]
			}
			pairs[i] = pair{k, i}
			m[k] = i
		}
		order := cborwire.SortKeys(nil, n, func(i int) string { return pairs[i].k })
		b := cborwire.AppendMapHead(nil, len(order))
		for _, i := range order {
			b = cborwire.AppendInt(cborwire.AppendText(b, pairs[i].k), int64(pairs[i].v))
		}
		same(t, m, b, want(t, m))
	}
}

func TestSortKeysKeepsOrderPrefix(t *testing.T) {
	keys := []string{"b", "a", "b"}
	got := cborwire.SortKeys([]int{7}, len(keys), func(i int) string { return keys[i] })
	if want := []int{7, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("SortKeys = %v, want %v", got, want)
	}
}

func TestWritingAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 64)
	keys := []string{"status", "name", "attrs", "wall_ns", "events", "name", "a", "b", "c", "d", "e", "f"}
	allocs := testing.AllocsPerRun(100, func() {
		b := cborwire.AppendMapHead(buf[:0], 3)
		b = cborwire.AppendText(b, "name")
		b = cborwire.AppendInt(b, -1<<40)
		b = cborwire.AppendFloat(b, 1.1)
		b = cborwire.AppendFloat(b, 0.5)
		b = cborwire.AppendBytes(b, []byte("12345678"))
		var stack [16]int
		order := cborwire.SortKeys(stack[:0], len(keys), func(i int) string { return keys[i] })
		if len(order) != len(keys)-1 || len(b) == 0 {
			t.Fatal("wrong output")
		}
	})
	if allocs != 0 {
		t.Fatalf("writing allocated %v times", allocs)
	}
}
