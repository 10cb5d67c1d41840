// Command footprint is the child process of figure 7: it ends spans at a
// steady rate (20,000 a second for 10 seconds by default) in a kept
// session, with our processor writing them into a store or with no
// processor at all, then reports its peak resident set (VmHWM in
// /proc/self/status). It prints one line in the format of `go test
// -bench`, for the table program.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/keys"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func main() {
	processor := flag.String("processor", "otelrecords", "otelrecords; none (the reference); or badger (raw Badger writing as much, a diagnostic)")
	dir := flag.String("dir", "", "the store directory (with -processor otelrecords)")
	rate := flag.Int("rate", 20_000, "spans per second")
	d := flag.Duration("for", 10*time.Second, "how long to end spans")
	memprofile := flag.String("memprofile", "", "write a heap profile (allocations and what is in use) to this file at the end")
	memtable := flag.Int64("memtable", 0, "with -processor badger: the memtable size in bytes, instead of the store's")
	flag.Parse()
	if err := run(*processor, *dir, *rate, *d, *memprofile, *memtable); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}

func run(processor, dir string, rate int, d time.Duration, memprofile string, memtable int64) error {
	ctx := context.Background()
	var handled []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { handled = append(handled, err) }))
	var opts []sdktrace.TracerProviderOption
	var exp *exporter.Exporter
	var raw *badger.DB
	switch processor {
	case "otelrecords":
		if dir == "" {
			return errors.New("-dir is required")
		}
		var err error
		if exp, err = exporter.New(dir); err != nil {
			return err
		}
		opts = append(opts, sdktrace.WithSpanProcessor(exp))
	case "badger":
		// Not our processor: raw Badger, with the store's options, writing
		// a record of the same size for every span, in one WriteBatch per
		// millisecond. What the store's database alone costs at this rate.
		if dir == "" {
			return errors.New("-dir is required")
		}
		opt := workload.BadgerOptions(dir, false)
		if memtable > 0 {
			opt = opt.WithMemTableSize(memtable).WithValueThreshold(min(opt.ValueThreshold, memtable*15/100))
		}
		var err error
		if raw, err = badger.Open(opt); err != nil {
			return err
		}
		defer raw.Close()
	case "none":
	default:
		return fmt.Errorf("unknown -processor %q", processor)
	}
	tp := sdktrace.NewTracerProvider(opts...)
	tr := tp.Tracer("bench")

	// The first span changes something, so the session is kept and every
	// later span is written.
	_, s := tr.Start(ctx, "keep", trace.WithAttributes(spanbridge.Changed()))
	s.End()
	start := time.Now()
	n := 0
	for {
		elapsed := time.Since(start)
		if elapsed >= d {
			break
		}
		// Catch up to the rate, then sleep a little: a steady stream
		// rather than one burst a second.
		first := n
		for due := int(elapsed.Seconds() * float64(rate)); n < due; n++ {
			workload.Span(ctx, tr, trace.WithAttributes(workload.Attrs(n)...))
		}
		if raw != nil && n > first {
			if err := writeRaw(raw, first, n); err != nil {
				return err
			}
		}
		time.Sleep(time.Millisecond)
	}
	achieved := float64(n) / time.Since(start).Seconds()
	if exp != nil {
		if err := exp.ForceFlush(ctx); err != nil {
			return err
		}
		if st := exp.Stats(); st.Dropped != 0 || st.Written != int64(n+1) {
			return fmt.Errorf("after %d spans: %+v; want every one written (errors: %v)", n+1, st, handled)
		}
	}
	// The peak, and where the memory is at the end: anonymous (the Go
	// heap, Badger's memtables) or file-backed (Badger's memory-mapped
	// logs and tables).
	var status [4]int64
	for i, field := range []string{"VmHWM", "VmRSS", "RssAnon", "RssFile"} {
		v, err := procStatus(field)
		if err != nil {
			return err
		}
		status[i] = v
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if memprofile != "" {
		f, err := os.Create(memprofile)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if err := tp.Shutdown(ctx); err != nil {
		return err
	}
	fmt.Printf("BenchmarkFootprint/%s\t1\t%d VmHWM-B\t%d VmRSS-B\t%d RssAnon-B\t%d RssFile-B\t%d HeapSys-B\t%.0f records/s\n",
		processor, status[0], status[1], status[2], status[3], ms.HeapSys, achieved)
	return nil
}

// rawValue is the size of a benchmark span's record (about 210 bytes).
var rawValue = bytes.Repeat([]byte{0xa2}, 210)

// writeRaw writes records [from, to) into db in one WriteBatch.
func writeRaw(db *badger.DB, from, to int) error {
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for i := from; i < to; i++ {
		key := keys.Record(workload.Kind, 1, uint64(i))
		if err := wb.Set(key, rawValue); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// procStatus returns a field of /proc/self/status, in bytes.
func procStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}
