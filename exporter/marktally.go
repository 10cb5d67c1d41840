package exporter

import (
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/tallies"
)

// The implicit marks MarksEnclosing lets go end on the user's goroutines
// and never reach the loop: they are counted there, for the session's
// tally (docs/FORMAT.md §3.6), by name in one of markShards small tables
// picked by the span's id, so that goroutines ending spans at once seldom
// share a lock; the loop hands the sums to the Recorder before it writes.
// Counting a name seen since the last hand-over allocates nothing.
const (
	markShards = 8
	// maxMarkNames is how many names a table sums between hand-overs;
	// a new name past them hands the table over at once.
	maxMarkNames = 256
)

// markTally is the exporter's count of implicit marks let go.
type markTally struct {
	shards [markShards]markShard
}

type markShard struct {
	mu    sync.Mutex
	at    map[string]int
	sums  []markSum
	dirty bool     // counted since the last hand-over
	_     [64]byte // a shard to a cache line or more
}

type markSum struct {
	name string
	e    tallies.Entry
}

// letGo counts the implicit mark s, let go. It reports whether its shard
// had counted nothing since the last hand-over: the caller wakes the
// loop, so that a session whose spans are all let go still has them
// handed over (once a shard per hand-over, not a wake a span).
func (m *markTally) letGo(s sdktrace.ReadOnlySpan, k spanKey, rec *recorder.Recorder) (first bool) {
	sh := &m.shards[int(k.span[7])%markShards]
	name, d := s.Name(), s.EndTime().Sub(s.StartTime())
	sh.mu.Lock()
	i, ok := sh.at[name]
	if !ok {
		i = sh.add(name, rec)
	}
	sh.sums[i].e.Add(d, "")
	first, sh.dirty = !sh.dirty, true
	sh.mu.Unlock()
	return first
}

// add starts the sum of a name, handing the shard over first when it
// holds maxMarkNames; sh.mu is held.
func (sh *markShard) add(name string, rec *recorder.Recorder) int {
	if len(sh.sums) >= maxMarkNames {
		sh.handOver(rec, true)
	}
	if sh.at == nil {
		sh.at = make(map[string]int)
	}
	i := len(sh.sums)
	sh.at[name] = i
	sh.sums = append(sh.sums, markSum{name: name, e: tallies.Entry{Hist: make([]int64, 0, tallies.Buckets)}})
	return i
}

// handOver gives the Recorder every shard's sums.
func (m *markTally) handOver(rec *recorder.Recorder) {
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		sh.handOver(rec, false)
		sh.mu.Unlock()
	}
}

// handOver gives the Recorder the shard's sums and empties them; all
// forgets the names too. sh.mu is held.
func (sh *markShard) handOver(rec *recorder.Recorder, all bool) {
	sh.dirty = false
	for i := range sh.sums {
		s := &sh.sums[i]
		if s.e.Count == 0 {
			continue
		}
		rec.TallyMarks(s.name, s.e)
		s.e = tallies.Entry{Hist: s.e.Hist[:0]}
	}
	if all {
		clear(sh.at)
		sh.sums = sh.sums[:0]
	}
}
