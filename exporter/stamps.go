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

// stampTable holds the stamp of every open span from OnStart to OnEnd. It
// is keyed by the span's trace and span ids: the SDK hands OnEnd a snapshot,
// not the span OnStart saw, and the ids are what the two share. Maps reuse
// their buckets, so a steady stream of spans allocates nothing here.
type stampTable struct {
	shards [stampShards]struct {
		mu sync.Mutex
		m  map[spanKey]started
		_  [40]byte // keep shards on separate cache lines
	}
}

// started is what OnStart learns of a span: its stamp, and how many
// attributes it started with (spanbridge.InputCount), which only OnStart
// can see.
type started struct {
	stamp  sessions.Stamp
	inputs int
}

type spanKey struct {
	trace trace.TraceID
	span  trace.SpanID
}

func keyOf(s sdktrace.ReadOnlySpan) spanKey {
	sc := s.SpanContext()
	return spanKey{sc.TraceID(), sc.SpanID()}
}

func (t *stampTable) put(k spanKey, st started) {
	sh := &t.shards[int(k.span[7])%stampShards]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[spanKey]started)
	}
	sh.m[k] = st
	sh.mu.Unlock()
}

func (t *stampTable) take(k spanKey) (started, bool) {
	sh := &t.shards[int(k.span[7])%stampShards]
	sh.mu.Lock()
	st, ok := sh.m[k]
	if ok {
		delete(sh.m, k)
	}
	sh.mu.Unlock()
	return st, ok
}
