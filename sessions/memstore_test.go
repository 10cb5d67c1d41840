package sessions_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/sessions/sessionstest"
)

func TestMemStore(t *testing.T) {
	sessionstest.TestStore(t, func(*testing.T) sessions.Store { return sessions.NewMemStore() })
}

// A write of many entries is merged in one pass: entries out of key
// order, a key twice in one write (the later wins), keys the store holds
// (the write's win) read as the same writes one at a time give; a scan
// under way keeps what it read. Batches written in falling key order (a
// pull's: the newest traces first) cost a pass each, not an insertion
// each.
func TestMemStoreMergesLargeWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	merged, single := sessions.NewMemStore(), sessions.NewMemStore()
	for round := range 50 {
		n := 1 + rng.IntN(200)
		batch := make([]sessions.Entry, n)
		for i := range batch {
			batch[i] = sessions.Entry{Key: []byte(fmt.Sprintf("k%04d", rng.IntN(3000))), Value: []byte(fmt.Sprint(round, i))}
		}
		if err := merged.Write(batch); err != nil {
			t.Fatal(err)
		}
		for _, e := range batch {
			if err := single.Write([]sessions.Entry{e}); err != nil {
				t.Fatal(err)
			}
		}
	}
	scan := func(s *sessions.MemStore) []string {
		var out []string
		for e, err := range s.Scan(nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(e.Key)+"="+string(e.Value))
		}
		return out
	}
	if a, b := scan(merged), scan(single); !slices.Equal(a, b) {
		t.Errorf("merged writes read %d entries, one at a time %d; they differ", len(a), len(b))
	}
	// A scan under way keeps its snapshot through a merged write.
	var seen []string
	for e, err := range merged.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 {
			big := make([]sessions.Entry, 100)
			for i := range big {
				big[i] = sessions.Entry{Key: []byte(fmt.Sprintf("a%03d", i)), Value: []byte("new")}
			}
			merged.Write(big)
		}
		seen = append(seen, string(e.Key)+"="+string(e.Value))
	}
	if want := scan(single); !slices.Equal(seen, want) {
		t.Errorf("a scan under a merged write read %d entries, want the %d before it", len(seen), len(want))
	}

	falling := sessions.NewMemStore()
	began := time.Now()
	for b := 99; b >= 0; b-- {
		batch := make([]sessions.Entry, 1000)
		for i := range batch {
			batch[i] = sessions.Entry{Key: fmt.Appendf(nil, "k%06d", b*1000+i), Value: []byte("v")}
		}
		falling.Write(batch)
	}
	t.Logf("100,000 entries in falling batches of 1,000: %v", time.Since(began))
	if falling.Len() != 100_000 {
		t.Errorf("%d entries, want 100,000", falling.Len())
	}
}
