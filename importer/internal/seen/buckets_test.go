package seen

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestSeenBucketIsACacheLine checks that a bucket is 64 bytes, and that
// a table's buckets hold no pointer the garbage collector would scan.
func TestSeenBucketIsACacheLine(t *testing.T) {
	if s := unsafe.Sizeof(bucket{}); s != bucketBytes {
		t.Fatalf("a bucket is %d bytes, want %d", s, bucketBytes)
	}
}

// forgetOldest forgets from the map what Table.forgetOldest forgets
// from the table, and returns how many.
func (r refSeen) forgetOldest(now uint32, keep int) int {
	if len(r) <= keep {
		return 0
	}
	var ages [1024]int
	age := func(w uint32) int { return min(int(now-min(wordSecond(w), now)), len(ages)-1) }
	for _, w := range r {
		ages[age(w)]++
	}
	cut, kept := 0, 0
	for cut < len(ages) && kept+ages[cut] <= keep {
		kept += ages[cut]
		cut++
	}
	n := 0
	for fp, w := range r {
		if int(now-min(wordSecond(w), now)) >= cut {
			delete(r, fp)
			n++
		}
	}
	return n
}

// checkProbes checks what find and removeIf rely on: a span is in its
// home bucket, or past it with every bucket between full; each bucket's
// overflow count is the spans past it from a home at or before it; and
// the count.
func checkProbes(t *testing.T, tab *Table, what string) {
	t.Helper()
	nb, n := len(tab.buckets), 0
	over := make([]uint32, nb)
	for b := range tab.buckets {
		for _, fp := range tab.buckets[b].fps {
			if fp == 0 {
				continue
			}
			n++
			for c := tab.home(fp); c != b; c = (c + 1) % nb {
				over[c]++
				if !tab.full(c) {
					t.Fatalf("%s: a span in bucket %d of %d is past bucket %d, not full, from its home %d", what, b, nb, c, tab.home(fp))
				}
			}
		}
	}
	for b := range over {
		if tab.buckets[b].over != over[b] {
			t.Fatalf("%s: bucket %d of %d counts %d spans past it, want %d", what, b, nb, tab.buckets[b].over, over[b])
		}
	}
	if n != tab.n {
		t.Fatalf("%s: %d spans in the buckets, n %d", what, n, tab.n)
	}
}

// TestSeenBucketsAreAMapOfSpans runs random sets, sweeps and forgetting
// of the oldest on tables of small bounds, kept at their bound, and on a
// map of every span, with fingerprints that crowd a few buckets and the
// table's last ones (so that runs wrap around its end), and checks they
// answer alike, that every probe run is whole after each removal, and
// that the table never holds more than two thirds of its bound.
func TestSeenBucketsAreAMapOfSpans(t *testing.T) {
	wrapped, forgot := false, false
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 48))
		bound := []int{256, 300, 512, 700}[seed%4] * bucketBytes * 3 / 2
		tab := New(bound)
		ref := refSeen{}
		var all []uint64
		at := uint32(0)
		newFP := func() uint64 {
			switch r.IntN(4) {
			case 0: // the table's last buckets: runs wrap around
				return ^uint64(0) - r.Uint64N(1<<56)
			case 1: // a few crowded homes
				return uint64(r.IntN(8))<<58 | r.Uint64N(1<<40) | 1
			default:
				return r.Uint64() | 1
			}
		}
		for step := range 30000 {
			x := r.IntN(1000)
			switch {
			case x < 992:
				var fp uint64
				if len(all) > 0 && r.IntN(5) == 0 {
					fp = all[r.IntN(len(all))]
				} else {
					fp = newFP()
					all = append(all, fp)
				}
				st := State(1 + r.IntN(2))
				_, known := ref[fp]
				slots := len(tab.buckets) * bucketSlots
				if !known && len(tab.buckets) == tab.max && 5*(len(ref)+1) > 4*slots {
					forgot = true
					ref.forgetOldest(at, slots*2/5)
				}
				if got, want := tab.Set(fp, st, at), ref.set(fp, st, at); got != want {
					t.Fatalf("seed %d, step %d: set(%x) reported new %v, want %v", seed, step, fp, got, want)
				}
				if tab.n != len(ref) {
					t.Fatalf("seed %d, step %d: n %d, want %d", seed, step, tab.n, len(ref))
				}
				if r.IntN(60) == 0 {
					at += uint32(1 + r.IntN(3))
				}
			case x < 996:
				from := at - uint32(r.IntN(int(at)+1))
				if got, want := tab.Sweep(from), ref.sweep(from); got != want {
					t.Fatalf("seed %d, step %d: sweep(%d) forgot %d, want %d", seed, step, from, got, want)
				}
			default:
				if tab.n == 0 {
					continue
				}
				keep := r.IntN(tab.n + 1)
				f0 := tab.forgotten
				tab.forgetOldest(at, keep)
				if got, want := tab.forgotten-f0, int64(ref.forgetOldest(at, keep)); got != want {
					t.Fatalf("seed %d, step %d: forgetOldest(%d) forgot %d, want %d", seed, step, keep, got, want)
				}
			}
			if tab.Bytes() > bound*2/3 {
				t.Fatalf("seed %d, step %d: the table holds %d bytes, over two thirds of %d", seed, step, tab.Bytes(), bound)
			}
			if x >= 992 || step%500 == 0 {
				checkProbes(t, &tab, "after a removal")
				some := all
				if len(some) > 300 {
					some = some[r.IntN(len(some)-300):][:300]
				}
				for _, fp := range some {
					if got, want := tab.State(fp), wordState(ref[fp]); got != want {
						t.Fatalf("seed %d, step %d: state of %x = %d, want %d", seed, step, fp, got, want)
					}
				}
			}
			if n := len(tab.buckets); n > 0 && !wrapped {
				last := &tab.buckets[n-1]
				for _, fp := range tab.buckets[0].fps {
					wrapped = wrapped || (fp != 0 && tab.home(fp) == n-1 && tab.full(n-1) && last.fps[0] != 0)
				}
			}
		}
		for fp, w := range ref {
			if tab.State(fp) != wordState(w) {
				t.Fatalf("seed %d: at the end, a span's state is %d, want %d", seed, tab.State(fp), wordState(w))
			}
		}
	}
	if !wrapped || !forgot {
		t.Fatalf("the runs never wrapped a run around the table's end (%v) or forgot at the bound (%v)", wrapped, forgot)
	}
}
