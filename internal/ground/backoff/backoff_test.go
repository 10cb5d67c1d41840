package backoff_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/backoff"
)

func TestNextDoublesWithinJitterUpToMax(t *testing.T) {
	b := backoff.Backoff{Min: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for round := range 2 {
		for _, cur := range []time.Duration{10, 20, 40, 80, 80, 80} {
			cur *= time.Millisecond
			if d := b.Next(); d < cur/2 || d > cur {
				t.Fatalf("round %d: interval %v, want within [%v, %v]", round, d, cur/2, cur)
			}
		}
		b.Reset()
	}
}

func TestNoZeroInterval(t *testing.T) {
	var b backoff.Backoff // no Min, no Max: it must not spin
	for range 10 {
		if d := b.Next(); d <= 0 || d > time.Millisecond {
			t.Fatalf("interval %v, want within (0, 1ms]", d)
		}
	}
	b = backoff.Backoff{Min: 50 * time.Millisecond, Max: time.Millisecond} // Max below Min
	for range 3 {
		if d := b.Next(); d < 25*time.Millisecond || d > 50*time.Millisecond {
			t.Fatalf("interval %v, want within [25ms, 50ms]", d)
		}
	}
}

func TestWaitSleepsOrEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := backoff.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
		start := time.Now()
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if slept := time.Since(start); slept < 50*time.Millisecond || slept > 100*time.Millisecond {
			t.Fatalf("first Wait slept %v, want within [50ms, 100ms]", slept)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		start = time.Now()
		var err error
		for err == nil {
			err = b.Wait(ctx)
		}
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 150*time.Millisecond {
			t.Fatalf("Wait = %v after %v, want the deadline, at 150ms", err, time.Since(start))
		}
		if err := b.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait on an ended context = %v", err)
		}
	})
}
