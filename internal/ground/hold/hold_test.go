package hold

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// A model of the buffer: a slice, the oldest dropped first until the new
// entry fits. The ring must agree with it after every operation, wrapping
// around its end many times, and never take more bytes than the budget.
func TestBufferAgreesWithAModel(t *testing.T) {
	type model struct {
		v       int
		payload []byte
		counted int
	}
	for _, budget := range []int{0, 64, 1000, 4 << 10, 64 << 10} {
		b := New[int](budget)
		var held []model
		rng := rand.New(rand.NewPCG(1, uint64(budget)))
		for i := range 5000 {
			payload := bytes.Repeat([]byte{byte(i)}, rng.IntN(300))
			counted := len(payload) + header + rng.IntN(40)
			held = append(held, model{i, payload, counted})
			wantDropped := 0
			if counted > budget {
				wantDropped, held = len(held), nil
			}
			for sum(held, func(m model) int { return m.counted }) > budget {
				held = held[1:]
				wantDropped++
			}
			if got := b.Hold(i, counted, payload[:len(payload)/2], payload[len(payload)/2:]); got != wantDropped {
				t.Fatalf("budget %d, entry %d: dropped %d, want %d", budget, i, got, wantDropped)
			}
			if len(b.ring) > budget {
				t.Fatalf("budget %d: ring of %d bytes", budget, len(b.ring))
			}
			if i%53 == 0 {
				// Trim to a random bound: the oldest go first, and the
				// ring shrinks once it is mostly empty.
				target := rng.IntN(budget + 1)
				want := 0
				for sum(held, func(m model) int { return m.counted }) > target {
					held = held[1:]
					want++
				}
				if got := b.Trim(target); got != want {
					t.Fatalf("budget %d: Trim(%d) dropped %d, want %d", budget, target, got, want)
				}
				if b.used < len(b.ring)/4 && len(b.ring) > 4<<10 {
					t.Fatalf("budget %d: %d bytes used of a ring of %d after Trim", budget, b.used, b.Size())
				}
			}
			if i%97 != 0 {
				continue
			}
			var got []model
			b.Each(func(v int, p []byte) { got = append(got, model{v, bytes.Clone(p), 0}) })
			if len(got) != len(held) || b.Len() != len(held) {
				t.Fatalf("budget %d: %d entries, want %d", budget, len(got), len(held))
			}
			for j := range got {
				if got[j].v != held[j].v || !bytes.Equal(got[j].payload, held[j].payload) {
					t.Fatalf("budget %d: entry %d is %d, want %d", budget, j, got[j].v, held[j].v)
				}
			}
			if want := sum(held, func(m model) int { return m.counted }); b.Counted() != want {
				t.Fatalf("counted %d, want %d", b.Counted(), want)
			}
		}
	}
}

func sum[T any](xs []T, f func(T) int) int {
	n := 0
	for _, x := range xs {
		n += f(x)
	}
	return n
}

// Dropped values are let go, so a held span that was evicted is not kept
// alive by the ring of values.
func TestDroppedValuesAreReleased(t *testing.T) {
	b := New[*string](100)
	for i := range 50 {
		s := fmt.Sprint(i)
		b.Hold(&s, 30)
	}
	live := 0
	for _, v := range b.values {
		if v != nil {
			live++
		}
	}
	if live != b.Len() || live != 3 {
		t.Fatalf("%d values referenced, %d held; want 3", live, b.Len())
	}
}

// OnDrop sees every entry Hold and Trim drop, oldest first, with its
// payload whole however it wraps in the ring — one too large for the
// budget included — and Reset calls it for none.
func TestOnDropSeesEveryDroppedEntry(t *testing.T) {
	b := New[int](1000)
	var seen []int
	b.OnDrop(func(v int, p []byte) {
		if len(p) != v%300 || (len(p) > 0 && (p[0] != byte(v) || p[len(p)-1] != byte(v))) {
			t.Fatalf("entry %d dropped with payload of %d bytes %v", v, len(p), p[:min(len(p), 4)])
		}
		seen = append(seen, v)
	})
	held := 0
	for i := range 3000 {
		p := bytes.Repeat([]byte{byte(i)}, i%300)
		counted := len(p) + header
		if i == 2000 {
			counted = 5000 // alone past the budget: everything goes, itself too
		}
		held += 1 - b.Hold(i, counted, p[:len(p)/2], p[len(p)/2:])
	}
	held -= b.Trim(0)
	if held != 0 || b.Len() != 0 || len(seen) != 3000 {
		t.Fatalf("%d held, %d dropped; want all 3000 dropped", b.Len(), len(seen))
	}
	for i, v := range seen {
		if v != i {
			t.Fatalf("dropped %d in place %d: not oldest first", v, i)
		}
	}
	b.Hold(1, 9, []byte{1})
	b.Reset()
	if len(seen) != 3000 {
		t.Fatal("Reset called OnDrop")
	}
}
