// Command warm is the child process of figure 3 (warm session): it ends
// observed spans in a session that never changes anything, then reports
// the heap the program still holds after a garbage collection, and the
// bytes the store directory holds (there must be none: a warm session
// never creates its store).
//
// bench/run runs it twice per sample: with -spans 1000000, and with
// -spans 0 (the same program without the spans), and subtracts the two
// heaps. It prints one line in the format of `go test -bench`, so the
// table program reads it like the other figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func main() {
	spans := flag.Int("spans", 1_000_000, "observed spans to end (0: the baseline)")
	dir := flag.String("dir", "", "the store directory the exporter is given; it must not exist, and must not after the run")
	flag.Parse()
	if err := run(*spans, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "warm:", err)
		os.Exit(1)
	}
}

// flushEvery keeps the exporter's queue from filling, so every span goes
// through the retention rules and none is dropped.
const flushEvery = 10_000

func run(spans int, dir string) error {
	if dir == "" {
		return errors.New("-dir is required")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s exists already", dir)
	}
	var handled int
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) { handled++ }))
	ctx := context.Background()
	exp, err := exporter.New(dir)
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("bench")
	for i := range spans {
		workload.Span(ctx, tr, trace.WithAttributes(append(workload.Attrs(i), spanbridge.Observed())...))
		if i%flushEvery == flushEvery-1 {
			if err := exp.ForceFlush(ctx); err != nil {
				return err
			}
		}
	}
	if err := exp.ForceFlush(ctx); err != nil {
		return err
	}
	st := exp.Stats()
	heap := heapAfterGC()
	if spans > 0 && (st.Dropped != 0 || st.Held == 0 || st.SessionsKept != 0) {
		return fmt.Errorf("after %d observed spans: %+v; want none dropped, some held, the session not kept", spans, st)
	}
	if err := tp.Shutdown(ctx); err != nil {
		return err
	}
	disk, err := du(dir)
	if err != nil {
		return err
	}
	name := "otelrecords"
	if spans == 0 {
		name = "baseline"
	}
	fmt.Printf("BenchmarkWarm/%s\t1\t%d heap-B\t%d disk-B\t%d held-B\t%d held\t%d evicted\t%d dropped\n",
		name, heap, disk, st.HeldBytes, st.Held, st.Evicted, st.Dropped)
	runtime.KeepAlive(tp)
	return nil
}

// heapAfterGC returns the bytes of live heap objects after a full
// collection. Two collections, so that what the first freed from sync.Pools
// (moved to their victim caches) is gone too.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// du returns the bytes of the files under dir; -1 means the directory
// exists but is empty, 0 that it does not exist.
func du(dir string) (int64, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	total := int64(-1)
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total = max(total, 0) + fi.Size()
		return nil
	})
	return total, err
}
