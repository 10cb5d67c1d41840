// Package backoff is the one way otelrecords waits before trying again:
// a jittered exponential backoff. A store held by another process is
// retried by the reader that waits for it, by the writer that shares it
// and by the recovery that recreates it; they all wait the same way, so
// the waiting is written once.
//
// Each interval is drawn at random from the upper half of the current one
// ("equal jitter"), so processes that found the store busy at the same
// moment do not knock again in step, while the wait still grows: the
// current interval starts at Min and doubles up to Max.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// smallest is the interval a Backoff with no positive Min starts at: a
// zero interval would spin.
const smallest = time.Millisecond

// Backoff gives the intervals to wait between tries. Set Min and Max; the
// zero value of the rest is ready to use. A Backoff is not safe for
// concurrent use: each loop that retries has its own.
type Backoff struct {
	// Min is the first interval, before jitter (1 ms if not positive).
	Min time.Duration
	// Max bounds the interval, before jitter (Min if smaller than Min).
	Max time.Duration

	cur time.Duration // the current interval; 0 before the first Next
}

// Next returns the next interval to wait: a random duration in
// [cur/2, cur], cur starting at Min and doubling at each call up to Max.
func (b *Backoff) Next() time.Duration {
	lo := max(b.Min, smallest)
	if b.cur < lo {
		b.cur = lo
	}
	d := b.cur/2 + rand.N(b.cur/2+1)
	b.cur = min(b.cur*2, max(b.Max, lo))
	return d
}

// Reset makes the next interval start at Min again, after a try that
// succeeded.
func (b *Backoff) Reset() { b.cur = 0 }

// Wait sleeps for the next interval, or until ctx ends, when it returns
// ctx.Err() at once.
func (b *Backoff) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
