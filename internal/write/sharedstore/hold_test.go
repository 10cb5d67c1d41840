package sharedstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestHoldWaitsItsTurn: Hold, which the prune and the byte bound of a
// kept session run through, waits for a store another process holds as a
// write does, and runs fn on it once the holder lets go; when its context
// ends first, fn does not run and the error matches the context's and
// badgerstore.ErrLocked, stating the time actually waited. Before, the
// prune tried the store once and failed with "store locked", counted as
// a write error (issue 22.4).
func TestHoldWaitsItsTurn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		w := holdThenWrite(t, dir, time.Second)
		start := time.Now()
		var got string
		err := w.Hold(context.Background(), func(st sessions.Store) error {
			if err := st.Write(entries("k", "v")); err != nil {
				return err
			}
			got = contents(t, st)
			return nil
		})
		if err != nil || got != "k=v" {
			t.Fatalf("Hold = %v, fn saw %q; want it run on the store", err, got)
		}
		if waited := time.Since(start); waited < time.Second || waited > 1200*time.Millisecond {
			t.Fatalf("Hold got in after %v, want within 200ms of the holder letting go at 1s", waited)
		}
		if s := w.StoreStats(); s.BusyWaits != 1 {
			t.Fatalf("StoreStats = %+v, want one busy wait", s)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		holder := hold(t, dir)
		defer holder.Close()
		w := sharedstore.New(dir, nil)
		defer w.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 1100*time.Millisecond)
		defer cancel()
		ran := false
		err := w.Hold(ctx, func(sessions.Store) error { ran = true; return nil })
		if ran || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, badgerstore.ErrLocked) || !strings.Contains(err.Error(), "after waiting 1.1s") {
			t.Fatalf("Hold past its deadline = %v (fn ran: %v); want the deadline's error, ErrLocked, and the 1.1s waited", err, ran)
		}
	})
}

// holdThenWrite holds the store in dir as another process would, letting
// it go after d, and returns a Writer on it, closed at cleanup.
func holdThenWrite(t *testing.T, dir string, d time.Duration) *sharedstore.Writer {
	holder := hold(t, dir)
	go func() {
		time.Sleep(d)
		holder.Close()
	}()
	w := sharedstore.New(dir, nil)
	t.Cleanup(func() { w.Close() })
	return w
}
