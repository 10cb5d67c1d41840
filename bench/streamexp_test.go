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
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/sessions"
)

func expRecords(b *testing.B, n int) (keys, vals [][]byte) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tp.Tracer("bench")
	endSpans(context.Background(), tr, 0, n)
	start := time.Now()
	for i, s := range rec.Ended() {
		k, v, err := workload.Encode(s, sessions.Stamp{Session: 1, Seq: uint64(i), Offset: s.StartTime().Sub(start)})
		if err != nil {
			b.Fatal(err)
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	return
}

func BenchmarkExpStore(b *testing.B) {
	const n = 200_000
	keys, vals := expRecords(b, n)
	var size int
	for i := range vals {
		size += len(vals[i]) + len(keys[i])
	}
	b.Logf("%d records, %.0f bytes each", n, float64(size)/n)
	run := func(b *testing.B, f func(db *badger.DB) error) {
		db, err := badger.Open(workload.BadgerOptions(filepath.Join(b.TempDir(), "s"), false))
		if err != nil {
			b.Fatal(err)
		}
		settle()
		cpu := processCPU(b)
		t0 := time.Now()
		if err := f(db); err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/n, "cpu-ns/rec")
		b.ReportMetric(float64(time.Since(t0).Nanoseconds())/n, "wall-ns/rec")
	}
	batch := func(db *badger.DB, lo, hi int) error {
		wb := db.NewWriteBatch()
		defer wb.Cancel()
		for i := lo; i < hi; i++ {
			if err := wb.Set(keys[i], vals[i]); err != nil {
				return err
			}
		}
		return wb.Flush()
	}
	b.Run("writebatch2500", func(b *testing.B) {
		run(b, func(db *badger.DB) error {
			for lo := 0; lo < n; lo += 2500 {
				if err := batch(db, lo, min(lo+2500, n)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	stream := func(db *badger.DB, lo, hi int, incremental bool) error {
		sw := db.NewStreamWriter()
		var err error
		if incremental {
			err = sw.PrepareIncremental()
		} else {
			err = sw.Prepare()
		}
		if err != nil {
			return err
		}
		buf := z.NewBuffer(1<<20, "exp")
		defer buf.Release()
		for i := lo; i < hi; i++ {
			badger.KVToBuffer(&pb.KV{Key: keys[i], Value: vals[i], Version: 1, StreamId: 1}, buf)
		}
		if err := sw.Write(buf); err != nil {
			return err
		}
		return sw.Flush()
	}
	b.Run("stream-once", func(b *testing.B) {
		run(b, func(db *badger.DB) error { return stream(db, 0, n, false) })
	})
	for _, per := range []int{2500, 20000} {
		b.Run(fmt.Sprintf("stream-incremental%d", per), func(b *testing.B) {
			run(b, func(db *badger.DB) error {
				for lo := 0; lo < n; lo += per {
					if err := stream(db, lo, min(lo+per, n), true); err != nil {
						return fmt.Errorf("at %d: %w", lo, err)
					}
				}
				return nil
			})
		})
	}
}
