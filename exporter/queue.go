package exporter

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
)

// queueShards spreads the span queue over several locks, so that spans
// ending on many goroutines rarely wait for each other (one lock was 57%
// of the mutex wait of 8 goroutines ending spans: issue 12).
const queueShards = 16

// spanQueue is what the goroutines ending spans hand the loop: records
// already encoded, in shards, each a byte arena and a small index. The
// loop swaps every shard's batch for an empty one at once and routes what
// it took in the order the spans ended (their tickets); the batches it
// took come back, emptied, as the next empty ones, so a steady stream of
// spans allocates nothing here.
type spanQueue struct {
	shards  [queueShards]queueShard
	tickets atomic.Uint64 // the order spans were queued in, across shards
	// n is how many spans are queued: reserved by OnEnd (reserve) before
	// they are put, until the loop has routed them, so that it bounds what
	// waits in memory however the loop takes it.
	n atomic.Int64
}

type queueShard struct {
	mu    sync.Mutex
	batch queueBatch
	_     [64]byte // keep shards' locks and slices on separate cache lines
}

// queueBatch is one shard's queued spans.
type queueBatch struct {
	bytes    []byte                  // encoded record values
	recs     []queuedSpan            // in ticket order
	tooLarge []tooLarge              // records that did not encode within a store's limits
	spans    []sdktrace.ReadOnlySpan // with WithForward: recs[i]'s span is spans[i]
	traces   []trace.TraceID         // under KeepByTrace: recs[i]'s trace is traces[i]
}

// queuedSpan is one ended span in a queueBatch.
type queuedSpan struct {
	ticket     uint64
	stamp      sessions.Stamp
	kind       string
	start, end int        // its value in bytes; for a tooLarge one, start indexes tooLarge
	hint       tally.Hint // where its value's tally fields are
	effect     sessions.Effect
	what       uint8
	root       bool // a local root: its trace's grace starts (KeepByTrace)
}

// What a queuedSpan holds.
const (
	spanRecord   uint8 = iota // an encoded record
	spanTooLarge              // a record no store holds: dropped and counted
	spanForward               // no record (the marks policy): only forwarded, or a root that ends its trace
)

// tooLarge is a record that encoding refused, and why.
type tooLarge struct {
	name string
	err  error
}

// put queues one span's entry in shard sh; value is copied.
// Under KeepByTrace tr is the span's trace; nil otherwise, when nothing
// is kept of it.
func (q *spanQueue) put(sh int, s queuedSpan, value []byte, tl tooLarge, span sdktrace.ReadOnlySpan, forward bool, tr *trace.TraceID) {
	shard := &q.shards[sh]
	shard.mu.Lock()
	b := &shard.batch
	// The ticket is taken under the shard's lock, so each shard's entries
	// are in ticket order: the loop merges them without sorting.
	s.ticket = q.tickets.Add(1)
	switch s.what {
	case spanRecord:
		s.start = len(b.bytes)
		b.bytes = append(b.bytes, value...)
		s.end = len(b.bytes)
	case spanTooLarge:
		s.start = len(b.tooLarge)
		b.tooLarge = append(b.tooLarge, tl)
	}
	b.recs = append(b.recs, s)
	if forward {
		b.spans = append(b.spans, span)
	}
	if tr != nil {
		b.traces = append(b.traces, *tr)
	}
	shard.mu.Unlock()
}

// take swaps every shard's batch for the empty one in into and returns
// how many spans it took. Every shard is locked at once, so that what it
// takes is a cut through the order spans ended in: a span queued after
// another, on any goroutine, is never taken before it.
func (q *spanQueue) take(into *[queueShards]queueBatch) int {
	for i := range q.shards {
		q.shards[i].mu.Lock()
	}
	n := 0
	for i := range q.shards {
		b := &q.shards[i].batch
		*b, into[i] = into[i], *b
		n += len(into[i].recs)
	}
	for i := range q.shards {
		q.shards[i].mu.Unlock()
	}
	return n
}

// The largest arrays a taken batch keeps for reuse; a burst's larger ones
// go, so that a quiet program holds little.
const (
	maxSpareBytes = 256 << 10
	maxSpareRecs  = 2048
)

// empty readies taken batches to be swapped in again.
func empty(taken *[queueShards]queueBatch) {
	for i := range taken {
		b := &taken[i]
		if cap(b.bytes) > maxSpareBytes || cap(b.recs) > maxSpareRecs {
			*b = queueBatch{}
			continue
		}
		clear(b.recs) // their kinds are strings of ended spans
		clear(b.tooLarge)
		clear(b.spans)
		b.bytes, b.recs, b.tooLarge, b.spans, b.traces = b.bytes[:0], b.recs[:0], b.tooLarge[:0], b.spans[:0], b.traces[:0]
	}
}

// merged calls f with every taken span in ticket order: the order the
// spans ended in, as the held records and the forwarder keep them.
func merged(taken *[queueShards]queueBatch, f func(b *queueBatch, i int)) {
	var next [queueShards]int
	for {
		best := -1
		var low uint64
		for s := range taken {
			if i := next[s]; i < len(taken[s].recs) {
				if t := taken[s].recs[i].ticket; best < 0 || t < low {
					best, low = s, t
				}
			}
		}
		if best < 0 {
			return
		}
		f(&taken[best], next[best])
		next[best]++
	}
}

// fullWait is the longest OnEnd waits for room in a full queue while
// neither the loop nor the store makes progress, before it drops the
// span: long enough for Badger to flush a memtable on a loaded machine,
// so that 8 goroutines ending spans as fast as they can wait for the
// store rather than lose spans; short enough that a span call never waits
// long on a stalled store, and waits once (below). Each time the loop
// routes spans out of the queue, or Badger takes more of the write in
// progress (badgerstore.WithWriteProgress), the wait starts over: a store
// that writes, however slowly, slows the span calls down rather than
// losing their spans.
//
// It was 100 ms. A write of writeAt bytes took 10 ms in the median and
// 40-107 ms in its tail under figure 4 of bench/run, so progress only
// between writes missed that now and then. Progress within a write left
// gaps too: when flushes of memtables fall behind the writes, Badger
// takes nothing until the next flush ends. A 37-round soak of figure 4
// caught two such gaps, of 120.7 and 129.8 ms, each of which dropped
// spans; goroutine dumps showed the writes waiting for a flush that
// compactions kept from the cores and the disk. 250 ms is about twice
// the longest. A disk that stalls a flush for longer, with every
// memtable waiting to flush full (badgerstore's numMemtables), still
// drops the spans ended meanwhile, rather than hold the span calls on
// the disk.
//
// Once a wait ends without progress, the queue is saturated: spans are
// dropped without waiting until the loop or the store makes progress
// again, so a stalled store costs one such wait, not one per span; and a
// store that stalled for a moment costs the spans ended during the stall,
// not those ended while the queue drains (goroutines that drop rather
// than wait end spans many times faster than any store takes them:
// 141,544 of them in one round of figure 4 while the queue drained to
// half, as it had to before).
const fullWait = 250 * time.Millisecond

// reserve takes a place in the queue for one span, waiting for the loop
// (at most fullWait without progress) when the queue is full; false means
// the span is to be dropped.
func (e *Exporter) reserve() bool {
	n := e.queue.n.Add(1)
	if n <= int64(e.maxQueue) {
		if n == 1 || n == int64(e.wakeAt()) {
			// The first span arms the loop's write interval; a queue this
			// full is taken at once.
			e.signal()
		}
		if n > int64(e.maxQueue)/2 {
			// Goroutines ending spans faster than the store takes them
			// would otherwise keep the cores from the loop and Badger's
			// own goroutines, until the queue is full: past half of it,
			// each lets them run first. It never waits on the disk.
			runtime.Gosched()
		}
		if n >= e.pressAt.Load() {
			// Spans pile up behind a write waiting for a busy store: it
			// stops waiting and spools, and the loop takes them.
			select {
			case e.press <- struct{}{}:
			default:
			}
		}
		return true
	}
	e.queue.n.Add(-1)
	if e.saturated.Load() {
		return false
	}
	return e.waitRoom()
}

// waitRoom waits for the loop to route spans out of the full queue, and
// reserves a place when it has; it gives up when neither the loop has
// routed spans nor the store taken entries for fullWait.
func (e *Exporter) waitRoom() bool {
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	e.signal()
	t := time.NewTimer(fullWait)
	defer t.Stop()
	stored := e.stored.Load()
	for {
		room := *e.room.Load()
		if e.queue.n.Add(1) <= int64(e.maxQueue) {
			return true
		}
		e.queue.n.Add(-1)
		select {
		case <-room:
			// Progress: other waiters may take the room, but the loop
			// is writing, so the wait starts over.
			// (Since Go 1.23 Reset leaves no stale tick in t.C.)
			t.Reset(fullWait)
		case <-t.C:
			if now := e.stored.Load(); now != stored {
				// The loop is still in a write, and Badger takes it:
				// slow, not stalled.
				stored = now
				t.Reset(fullWait)
				continue
			}
			e.saturated.Store(true)
			return false
		case <-e.done:
			return false
		}
		if e.closed.Load() {
			return false
		}
	}
}

// storing counts entries Badger has taken of a write in progress
// (badgerstore.WithWriteProgress), which waitRoom takes as progress. It
// runs on the loop's goroutine, inside the write.
func (e *Exporter) storing(entries int) {
	e.stored.Add(int64(entries))
	e.progressed()
}

// progressed ends a saturated queue's drops: the loop or the store has
// made progress, so a full queue waits for room again.
func (e *Exporter) progressed() {
	if e.saturated.Load() {
		e.saturated.Store(false)
	}
}

// routed gives back the places of n spans the loop has routed, and wakes
// the spans waiting for room.
func (e *Exporter) routed(n int) {
	if n == 0 {
		return
	}
	e.queue.n.Add(-int64(n))
	e.progressed()
	if e.waiting.Load() > 0 {
		room := make(chan struct{})
		close(*e.room.Swap(&room))
	}
}

// wakeAt is how many queued spans make the loop take them before its
// write interval is up: a write's worth (writeAt bytes of records of about
// 200 bytes), or a quarter of the queue if that is less.
func (e *Exporter) wakeAt() int { return max(min(e.maxQueue/4, writeAt/200), 1) }
