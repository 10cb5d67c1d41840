package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The garbage collector's pace. By default Go lets its heap grow to twice
// what is live before it collects: a view holding a session's tree of 15
// MB (200,000 records) would peak at 30, and one of a million records at
// 120. The records command keeps the headroom near gcHeadroom instead —
// as GOGC would at 100 × gcHeadroom / live — but never under a tenth of
// what is live nor over what Go does by default, so its memory follows
// what it holds: a large tree, of pointer-free nodes that cost the
// collector next to nothing to mark, is collected over more often rather
// than doubled: the report of a million records took 83 MiB rather than
// 133, in 6.7 s rather than 6.4. GOGC, when set, decides instead.
const (
	gcHeadroom   = 4 << 20
	gcPercentMin = 10
	gcPercentMax = 100
)

// paceGC sets the collector's pace after each collection, from the heap
// it found live (unless GOGC is set): a finalizer on an object that only
// a collection frees runs once per cycle, and sets the next one.
func paceGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	armGCPacer()
}

// gcSentinel is freed by each collection. It is larger than the tiny
// allocations Go packs together, whose finalizers may never run.
type gcSentinel struct{ _ [32]byte }

func armGCPacer() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		debug.SetGCPercent(gcPercent(liveHeap()))
		armGCPacer()
	})
}

// gcPercent returns the GOGC that gives a heap of live bytes gcHeadroom
// to grow, within [gcPercentMin, gcPercentMax].
func gcPercent(live uint64) int {
	if live == 0 {
		return gcPercentMax
	}
	return int(min(max(uint64(gcHeadroom)*100/live, gcPercentMin), gcPercentMax))
}

// liveHeap returns the bytes the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
