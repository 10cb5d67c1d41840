package explain_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// The hostile shapes the tree must stay linear on:
//
//	go test ./explain -run '^$' -bench . -benchtime 5x
//
// Each reports per record: wall ns, CPU ns (every thread of the process,
// the collector's too: steadier than wall time on a loaded machine), bytes
// allocated, and (for the builds) bytes the result keeps.
var shapes = []struct {
	name  string
	spans func() []span
}{
	{"deep10k", func() []span { return deep(10_000) }},
	{"kinds100k", func() []span { return manyKinds(100_000) }},
	{"flat1M", func() []span { return flat(1_000_000) }},
}

// benchSession is a shape recorded in a store, and read back.
type benchSession struct {
	store   *sliceStore
	id      sessions.SessionID
	records []sessions.KindRecord
	tree    *explain.SessionTree
}

var (
	benchMu       sync.Mutex
	benchSessions = map[string]*benchSession{}
)

// session records a shape once per test binary.
func session(b *testing.B, name string, spans func() []span) *benchSession {
	benchMu.Lock()
	defer benchMu.Unlock()
	if s := benchSessions[name]; s != nil {
		return s
	}
	s := &benchSession{store: &sliceStore{}}
	s.id = record(s.store, spans())
	for kr, err := range explain.InStampOrder(sessions.NewRecords(s.store), s.id, nil) {
		if err != nil {
			b.Fatal(err)
		}
		s.records = append(s.records, kr)
	}
	var err error
	if s.tree, err = explain.BuildTree(slices2(s.records)); err != nil {
		b.Fatal(err)
	}
	benchSessions[name] = s
	return s
}

// perRecord runs f b.N times and reports its cost per record.
func perRecord(b *testing.B, n int, f func()) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		f()
	}
	b.StopTimer()
	cpu = cpuTime() - cpu
	runtime.ReadMemStats(&after)
	records := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/records, "cpu-ns/record")
	}
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/records, "B/record")
}

// kept reports what the value build returns holds on to, per record.
// Call it after perRecord: ResetTimer drops metrics reported before.
func kept[T any](b *testing.B, n int, build func() T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/float64(n), "kept-B/record")
}

// BuildTree alone, from records in memory: the tree's own cost.
func BenchmarkBuildTree(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			s := session(b, sh.name, sh.spans)
			build := func() *explain.SessionTree {
				t, err := explain.BuildTree(slices2(s.records))
				if err != nil {
					b.Fatal(err)
				}
				return t
			}
			perRecord(b, len(s.records), func() { build() })
			kept(b, len(s.records), build)
		})
	}
}

// Tree from the store: the merged read, the decoding and the build.
func BenchmarkTree(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			s := session(b, sh.name, sh.spans)
			r := sessions.NewRecords(s.store)
			build := func() *explain.SessionTree {
				t, err := explain.Tree(r, s.id)
				if err != nil {
					b.Fatal(err)
				}
				return t
			}
			perRecord(b, len(s.records), func() { build() })
			kept(b, len(s.records), build)
		})
	}
}

// Nest, streaming from records in memory: the span map alone.
func BenchmarkNest(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			s := session(b, sh.name, sh.spans)
			perRecord(b, len(s.records), func() {
				for _, err := range explain.Nest(slices2(s.records)) {
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func BenchmarkSummary(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			s := session(b, sh.name, sh.spans)
			perRecord(b, len(s.records), func() { s.tree.Summary() })
		})
	}
}

func BenchmarkCriticalPath(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			s := session(b, sh.name, sh.spans)
			perRecord(b, len(s.records), func() { s.tree.CriticalPath() })
		})
	}
}

func BenchmarkWalk(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			s := session(b, sh.name, sh.spans)
			perRecord(b, len(s.records), func() {
				for range s.tree.Walk() {
				}
			})
		})
	}
}
