package exporter

import (
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// stampShards spreads the stamps of open spans over several locks, so
// spans starting and ending on many goroutines rarely wait for each other.
const stampShards = 32

// stampTable holds every open span from OnStart to OnEnd: its stamp, and
// what the marks policy needs (its parent, and whether a record started
// inside it). It is keyed by the span's trace and span ids: the SDK hands
// OnEnd a snapshot, not the span OnStart saw, and the ids are what the two
// share. Maps reuse their buckets, so a steady stream of spans allocates
// nothing here.
type stampTable struct {
	shards [stampShards]stampShard
}

type stampShard struct {
	mu sync.Mutex
	m  map[spanKey]openSpan
	_  [64]byte // keep shards on separate cache lines (a shard is less than one)
}

type spanKey struct {
	trace trace.TraceID
	span  trace.SpanID
}

// openSpan is what the table holds of an open span.
type openSpan struct {
	stamp sessions.Stamp
	// parent is the id of the span's local parent, zero for a root or a
	// span whose parent is remote. Set only under MarksEnclosing, the one
	// policy that walks up.
	parent trace.SpanID
	// encloses is set when a record starts inside the span, at any depth.
	encloses bool
	// inputs is how many attributes the span started with: its inputs.
	inputs int
}

func keyOf(s sdktrace.ReadOnlySpan) spanKey {
	sc := s.SpanContext()
	return spanKey{sc.TraceID(), sc.SpanID()}
}

func (t *stampTable) shard(k spanKey) *stampShard {
	return &t.shards[int(k.span[7])%stampShards]
}

func (t *stampTable) put(k spanKey, o openSpan) {
	sh := t.shard(k)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[spanKey]openSpan)
	}
	sh.m[k] = o
	sh.mu.Unlock()
}

func (t *stampTable) take(k spanKey) (openSpan, bool) {
	sh := t.shard(k)
	sh.mu.Lock()
	o, ok := sh.m[k]
	if ok {
		delete(sh.m, k)
	}
	sh.mu.Unlock()
	return o, ok
}

// unmarked reports whether k is open and not yet known to enclose a
// record.
func (t *stampTable) unmarked(k spanKey) bool {
	sh := t.shard(k)
	sh.mu.Lock()
	o, ok := sh.m[k]
	sh.mu.Unlock()
	return ok && !o.encloses
}

// markEnclosing marks the open span k and its open ancestors, up to depth
// of them, as enclosing a record. It stops at the first that is not open
// or already marked: a marked span's ancestors were marked by the walk
// that marked it.
func (t *stampTable) markEnclosing(k spanKey, depth int) {
	for range depth {
		sh := t.shard(k)
		sh.mu.Lock()
		o, ok := sh.m[k]
		if !ok || o.encloses {
			sh.mu.Unlock()
			return
		}
		o.encloses = true
		sh.m[k] = o
		sh.mu.Unlock()
		if !o.parent.IsValid() {
			return
		}
		k.span = o.parent
	}
}
