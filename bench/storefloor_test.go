//go:build bench

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/sessions"
)

// floorBatch is how many records a kept session writes in one batch at
// most (the writer's 512 KiB of records of about 290 bytes, rounded down):
// the WriteBatch and incremental stream sides write this many at a time.
const floorBatch = 2500

// BenchmarkStoreFloor is figure 3's floor: what Badger's write path costs
// per record, with nothing of ours around it. Each sub-benchmark writes
// b.N records (run it with -benchtime 200000x), the same pre-encoded keys
// and values for every side — the records figure 3's raw-Badger reference
// writes for the spans of BenchmarkSpanCPU, about 286 bytes each, of one
// kind of one session, in key order — into a fresh Badger opened with the
// store's options (workload.BadgerOptions), in one of Badger's ways:
//
//	writebatch                 a WriteBatch per floorBatch records, flushed (what a kept session does)
//	stream                     one StreamWriter (Prepare) over all of them
//	stream-incremental-2500    a StreamWriter with PrepareIncremental per floorBatch records
//	stream-incremental-20000   the same per 20,000 records
//
// The clock and the process CPU (getrusage: every goroutine, Badger's
// compactors and flushes included) run from a collected heap after the
// open to the return of Close, so what a write leaves to Badger's
// background is counted; cpu-ns/op is process CPU per record, ns/op wall
// time per record.
//
// What it proves: BSP's cpu-ns/op (BenchmarkSpanCPU/bsp) plus the
// writebatch side's is what a BatchSpanProcessor that persisted every
// span through Badger, as a kept session writes, would cost before any
// encoding, queue or session logic of ours. When that sum over the BSP
// alone is above figure 3's target, the target is below what Badger
// allows on this machine; benchtable prints the sum's ratio as an info
// line, and the stream sides against the writebatch side, so that a
// cheaper way would show.
//
// The records live in one flat arena, which the garbage collector does
// not scan, made before the clock and shared by every side.
func BenchmarkStoreFloor(b *testing.B) {
	run := func(b *testing.B, write func(db *badger.DB, a *arena, n int) error) {
		a := floorRecords(b, b.N)
		db, err := badger.Open(workload.BadgerOptions(filepath.Join(b.TempDir(), "store"), false))
		if err != nil {
			b.Fatal(err)
		}
		cpu := startCPU(b)
		if err := write(db, a, b.N); err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		cpu = processCPU(b) - cpu
		b.StopTimer()
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.Run("writebatch", func(b *testing.B) {
		run(b, func(db *badger.DB, a *arena, n int) error {
			for lo := 0; lo < n; lo += floorBatch {
				if err := floorWriteBatch(db, a, lo, min(lo+floorBatch, n)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("stream", func(b *testing.B) {
		run(b, func(db *badger.DB, a *arena, n int) error { return floorStream(db, a, 0, n, false) })
	})
	for _, per := range []int{floorBatch, 20_000} {
		b.Run(fmt.Sprintf("stream-incremental-%d", per), func(b *testing.B) {
			run(b, func(db *badger.DB, a *arena, n int) error {
				for lo := 0; lo < n; lo += per {
					if err := floorStream(db, a, lo, min(lo+per, n), true); err != nil {
						return fmt.Errorf("records from %d: %w", lo, err)
					}
				}
				return nil
			})
		})
	}
}

// floorWriteBatch writes the records [lo, hi) of a in one WriteBatch.
func floorWriteBatch(db *badger.DB, a *arena, lo, hi int) error {
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for i := lo; i < hi; i++ {
		if err := wb.Set(a.entry(i)); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// floorStream writes the records [lo, hi) of a with one StreamWriter,
// prepared for an empty database or, when incremental, for one that
// already holds data.
func floorStream(db *badger.DB, a *arena, lo, hi int, incremental bool) error {
	sw := db.NewStreamWriter()
	prepare := sw.Prepare
	if incremental {
		prepare = sw.PrepareIncremental
	}
	if err := prepare(); err != nil {
		return err
	}
	buf := z.NewBuffer(1<<20, "bench.StoreFloor")
	defer buf.Release()
	for i := lo; i < hi; i++ {
		k, v := a.entry(i)
		badger.KVToBuffer(&pb.KV{Key: k, Value: v, Version: 1, StreamId: 1}, buf)
	}
	if err := sw.Write(buf); err != nil {
		return err
	}
	return sw.Flush()
}

// floorSet is the records of BenchmarkStoreFloor made so far, shared by
// its sub-benchmarks.
var floorSet arena

// floorRecords returns an arena of at least n records: the key and value
// workload.Encode makes (what figure 3's raw-Badger reference writes) of
// the spans BenchmarkSpanCPU ends, in one session, stamped in order.
func floorRecords(b *testing.B, n int) *arena {
	if floorSet.len() >= n {
		return &floorSet
	}
	floorSet = arena{}
	enc := &encoder{a: &floorSet, start: time.Now()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(enc))
	endSpans(context.Background(), tp.Tracer("bench"), 0, n)
	if err := tp.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if enc.err != nil {
		b.Fatal(enc.err)
	}
	if floorSet.len() != n {
		b.Fatalf("%d records encoded of %d spans", floorSet.len(), n)
	}
	return &floorSet
}

// encoder is a SpanExporter that adds each span's record, as
// workload.Encode makes it, to an arena: session 1, in the order spans
// end.
type encoder struct {
	a     *arena
	start time.Time
	err   error
}

func (e *encoder) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	for _, s := range spans {
		stamp := sessions.Stamp{Session: 1, Seq: uint64(e.a.len()), Offset: s.StartTime().Sub(e.start)}
		k, v, err := workload.Encode(s, stamp)
		if err != nil {
			e.err = err
			return err
		}
		e.a.add(k, v)
	}
	return nil
}

func (e *encoder) Shutdown(context.Context) error { return nil }
