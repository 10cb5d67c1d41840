package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// failingStore fails every write with ENOSPC while full is set, and sets
// entries aside in its spool unless the spool is full too.
type failingStore struct {
	*opStore
	mu        sync.Mutex
	full      bool
	spoolFull bool
	spooled   []sessions.Entry
}

func (s *failingStore) Write(es []sessions.Entry) error {
	s.mu.Lock()
	full := s.full
	s.mu.Unlock()
	if full {
		return fmt.Errorf("no room: %w", syscall.ENOSPC)
	}
	return s.opStore.Write(es)
}

func (s *failingStore) Spool(es []sessions.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spoolFull {
		return fmt.Errorf("spool: %w", syscall.ENOSPC)
	}
	s.spooled = append(s.spooled, es...)
	return nil
}

func (s *failingStore) set(full, spoolFull bool) {
	s.mu.Lock()
	s.full, s.spoolFull = full, spoolFull
	s.mu.Unlock()
}

// TestFailingStoreKeepsMemoryBounded: a store that fails writes keeps its
// records queued only up to SpillBytes; then they go to its spool, or —
// the spool full too — the oldest are dropped, session rows kept, counted
// in Stats.Unwritable and reported once per failing streak. Room again,
// what is queued is written, and the next streak is reported again.
// Before, the failed batch went back in front of the queue without a cap.
func TestFailingStoreKeepsMemoryBounded(t *testing.T) {
	store := &failingStore{opStore: newOpStore()}
	var mu sync.Mutex
	var reports []string
	cfg := recorder.Config{Level: sessions.LevelBasic, Report: func(class string, err error) {
		mu.Lock()
		reports = append(reports, class+": "+err.Error())
		mu.Unlock()
	}}
	rec := recorder.New(cfg, func() (sessions.Store, error) { return store, nil }, nil)
	seq := 0
	var last sessions.Stamp
	put := func(effect sessions.Effect) {
		st, _ := rec.Stamp(time.Time{})
		last = st
		seq++
		body := sessions.Record{Name: fmt.Sprint(seq), Attributes: sessions.Attrs{{Key: "pad", Value: sessions.StringValue(strings.Repeat("x", 1000))}}}
		if err := rec.Record("work", effect, st, body); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	put(sessions.Changed)
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Full, spool first: what reaches SpillBytes goes to the spool.
	store.set(true, false)
	flushes := 0
	for range 3 * recorder.SpillBytes / 1000 {
		put(sessions.Observed)
		if rec.Full() {
			flushes++
			if err := rec.Flush(ctx); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Flush on a full store = %v, want ENOSPC", err)
			}
			if _, b := rec.Pending(); b >= recorder.SpillBytes {
				t.Fatalf("after a failed Flush %d bytes wait, want under SpillBytes", b)
			}
		}
	}
	s := rec.Stats()
	if flushes < 2 || s.Spooled == 0 || s.Spooled != s.SpooledUnwritable || int(s.Spooled) != len(store.spooled) || s.Unwritable != 0 {
		t.Fatalf("after %d flushes Stats = %+v (store spooled %d), want records spooled as failing, none dropped", flushes, s, len(store.spooled))
	}

	// The spool full too: the oldest are dropped, the memory bounded.
	store.set(true, true)
	for range 3 * recorder.SpillBytes / 1000 {
		put(sessions.Observed)
		if rec.Full() {
			rec.Flush(ctx)
			if _, b := rec.Pending(); b > recorder.SpillBytes/2 {
				t.Fatalf("after a failed Flush with a full spool %d bytes wait, want at most SpillBytes/2", b)
			}
		}
	}
	s = rec.Stats()
	if s.Unwritable == 0 {
		t.Fatalf("Stats = %+v, want records dropped as unwritable", s)
	}
	mu.Lock()
	if len(reports) != 2 || !strings.Contains(reports[0], "set aside in its spool") || !strings.Contains(reports[1], "dropped the") || !strings.Contains(reports[1], "no space") {
		t.Fatalf("reports = %q, want one of the spooling and one of the drops, naming the cause", reports)
	}
	mu.Unlock()

	// Room again: what is queued is written, the newest records kept.
	store.set(false, false)
	put(sessions.Observed)
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s = rec.Stats()
	total := int64(seq)
	if s.Written+s.Spooled+s.Unwritable != total || s.Pending != 0 {
		t.Fatalf("Stats = %+v: written+spooled+unwritable = %d, want all %d records accounted for", s, s.Written+s.Spooled+s.Unwritable, total)
	}
	want := string(testsupport.RecordKey("work", last))
	found := false
	for e, err := range store.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || string(e.Key) == want
	}
	if !found {
		t.Fatal("the newest record is not in the store once it had room")
	}

	// A new streak is reported again, once.
	store.set(true, true)
	for range 2 * recorder.SpillBytes / 1000 {
		put(sessions.Observed)
		if rec.Full() {
			rec.Flush(ctx)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 3 {
		t.Fatalf("reports = %q, want a third for the second streak", reports)
	}
}

// freeStore is a BusyStore no other process holds, counting the calls of
// Hold: the operations that would wait for the store if one did.
type freeStore struct {
	*opStore
	holds int
}

func (s *freeStore) WriteContext(_ context.Context, es []sessions.Entry) (int, error) {
	return 0, s.opStore.Write(es)
}

func (s *freeStore) Hold(_ context.Context, fn func(sessions.Store) error) error {
	s.holds++
	return fn(s.opStore)
}

func (s *freeStore) CloseContext(context.Context) error { return nil }

func (s *freeStore) StoreStats() recorder.StoreStats { return recorder.StoreStats{} }

// TestBoundWithinItsBytesHoldsNoStore: the byte bound needs the store to
// measure it once, and again only when it must trim or remeasure; a
// flush within the bound does not ask for the store, so it never waits
// for another process to do nothing.
func TestBoundWithinItsBytesHoldsNoStore(t *testing.T) {
	store := &freeStore{opStore: newOpStore()}
	rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, MaxBytes: 1 << 30}, func() (sessions.Store, error) { return store, nil }, nil)
	for i := range 5 {
		st, _ := rec.Stamp(time.Time{})
		if err := rec.Record("work", sessions.Changed, st, sessions.Record{Name: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		if err := rec.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if store.holds != 1 {
		t.Fatalf("5 flushes within the bound held the store %d times, want once (the first measure)", store.holds)
	}
}
