package recorder_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// heldStore is a BusyStore another process holds for good: WriteContext
// waits until its context ends and then spools everything. It notes
// whether each write's context had ended before the call, which is how
// the Recorder says "do not wait".
type heldStore struct {
	*opStore
	waited  []bool // per WriteContext: whether it had to wait
	spooled int
}

func (s *heldStore) WriteContext(ctx context.Context, es []sessions.Entry) (int, error) {
	s.waited = append(s.waited, ctx.Err() == nil)
	<-ctx.Done()
	s.spooled += len(es)
	return len(es), nil
}

func (s *heldStore) Hold(ctx context.Context, fn func(sessions.Store) error) error {
	<-ctx.Done()
	return fmt.Errorf("held by another process: %w", ctx.Err())
}

func (s *heldStore) CloseContext(context.Context) error { return nil }

func (s *heldStore) StoreStats() recorder.StoreStats { return recorder.StoreStats{} }

// TestLargeBatchDoesNotWaitForABusyStore: records of a kept session wait
// for a busy store only while they are few. Past SpillBytes, Full says so,
// and a Flush spools them without waiting; a small batch waits for its
// context; Close never waits.
func TestLargeBatchDoesNotWaitForABusyStore(t *testing.T) {
	store := &heldStore{opStore: newOpStore()}
	rec := recorder.New(recorder.Config{Level: sessions.LevelBasic}, func() (sessions.Store, error) { return store, nil }, nil)
	put := func(effect sessions.Effect, size int) {
		st, _ := rec.Stamp(time.Time{})
		body := sessions.Record{Name: "r", Attributes: sessions.Attrs{{Key: "pad", Value: sessions.StringValue(string(make([]byte, size)))}}}
		if err := rec.Record("work", effect, st, body); err != nil {
			t.Fatal(err)
		}
	}
	put(sessions.Changed, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := rec.Flush(ctx); err != nil { // small: waits for ctx
		t.Fatal(err)
	}
	n := 0
	for ; !rec.Full(); n++ {
		put(sessions.Observed, 1000)
	}
	if n < recorder.SpillBytes/1200 || n > recorder.SpillBytes/1000+1 {
		t.Fatalf("Full after %d records of 1,000 bytes, want after %d bytes", n, recorder.SpillBytes)
	}
	if err := rec.Flush(context.Background()); err != nil { // large: no wait
		t.Fatal(err)
	}
	if rec.Full() {
		t.Fatal("Full after a Flush")
	}
	put(sessions.Observed, 10)
	if err := rec.Close(context.Background()); err != nil { // closing: no wait
		t.Fatal(err)
	}
	if want := []bool{true, false, false}; len(store.waited) != 3 || store.waited[0] != want[0] || store.waited[1] || store.waited[2] {
		t.Fatalf("WriteContext waited %v, want %v (small batch, large batch, Close)", store.waited, want)
	}
	if got := rec.Stats(); got.Spooled != int64(n)+2 || got.Pending != 0 {
		t.Fatalf("Stats = %+v, want %d records spooled and none pending", got, n+2)
	}
}
