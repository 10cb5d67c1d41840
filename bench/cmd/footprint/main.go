// Command footprint is the child process of figures 3 (steady-state CPU)
// and 5 (footprint): it ends spans at a steady rate (20,000 a second for 10
// seconds by default) in a kept session, with our exporter writing them
// into a store, with raw Badger writing the same records, or with no
// processor at all; then it reports its peak resident set (VmHWM in
// /proc/self/status), the peak of its anonymous resident memory (the heap:
// Go's, and Badger's memtables and table builders, which live in it),
// sampled every 100 ms, the store's memory-mapped files (their size, and
// how much of them is resident), and the process CPU time per span
// (getrusage RUSAGE_SELF, from the first span to the end of the final
// flush), and how many spans our exporter dropped. It prints one line in the format of `go test -bench`, for the
// table program.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	processor := flag.String("processor", "otelrecords", "otelrecords; none (the reference); or badger (raw Badger writing the same records, behind a BatchSpanProcessor)")
	dir := flag.String("dir", "", "the store directory (with -processor otelrecords or badger)")
	rate := flag.Int("rate", 20_000, "spans per second")
	d := flag.Duration("for", 10*time.Second, "how long to end spans")
	name := flag.String("name", "Footprint", "the benchmark name of the line printed: Benchmark<name>/<processor>")
	memprofile := flag.String("memprofile", "", "write a heap profile (allocations and what is in use) to this file at the end")
	memtable := flag.Int64("memtable", 0, "with -processor badger: the memtable size in bytes, instead of the store's")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*processor, *dir, *name, *rate, *d, *memprofile, *memtable); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}

func run(processor, dir, name string, rate int, d time.Duration, memprofile string, memtable int64) error {
	ctx := context.Background()
	var handled []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { handled = append(handled, err) }))
	if processor != "none" {
		if dir == "" {
			return errors.New("-dir is required")
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		dir = abs
	}
	var opts []sdktrace.TracerProviderOption
	var exp *exporter.Exporter
	var raw *workload.RawBadger
	switch processor {
	case "otelrecords":
		var err error
		if exp, err = exporter.New(dir); err != nil {
			return err
		}
		opts = append(opts, sdktrace.WithSpanProcessor(exp))
	case "badger":
		// Not our exporter: the lower bound of persisting every span. The
		// same records, encoded by the library, written by raw Badger with
		// the store's options from a BatchSpanProcessor that never drops.
		opt := workload.BadgerOptions(dir, false)
		if memtable > 0 {
			opt = opt.WithMemTableSize(memtable).WithValueThreshold(min(opt.ValueThreshold, memtable*15/100))
		}
		db, err := badger.Open(opt)
		if err != nil {
			return err
		}
		raw = workload.NewRawBadger(db)
		opts = append(opts, sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(raw, sdktrace.WithBlocking())))
	case "none":
	default:
		return fmt.Errorf("unknown -processor %q", processor)
	}
	tp := sdktrace.NewTracerProvider(opts...)
	tr := tp.Tracer("bench")

	// The first span changes something, so the session is kept and every
	// later span is written; the flush opens the store before the clock.
	_, s := tr.Start(ctx, "keep", trace.WithAttributes(spanbridge.Changed()))
	s.End()
	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	peak := startSampling()
	cpu, err := workload.ProcessCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	n := 0
	for {
		elapsed := time.Since(start)
		if elapsed >= d {
			break
		}
		// Catch up to the rate, then sleep a little: a steady stream
		// rather than one burst a second.
		for due := int(elapsed.Seconds() * float64(rate)); n < due; n++ {
			workload.Span(ctx, tr, trace.WithAttributes(workload.Attrs(n)...))
		}
		time.Sleep(time.Millisecond)
	}
	achieved := float64(n) / time.Since(start).Seconds()
	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	end, err := workload.ProcessCPU()
	if err != nil {
		return err
	}
	cpuPerSpan := float64((end - cpu).Nanoseconds()) / float64(n)
	// Spans our exporter dropped (its queue full) are reported, not an
	// error: the table counts a run that dropped any as a miss.
	var dropped int64
	if exp != nil {
		st := exp.Stats()
		if dropped = st.Dropped; st.Written+st.Dropped != int64(n+1) {
			return fmt.Errorf("after %d spans: %+v; want every one written or dropped (errors: %v)", n+1, st, handled)
		}
	}
	if raw != nil && raw.Written() != uint64(n+1) {
		return fmt.Errorf("raw Badger wrote %d records, want %d", raw.Written(), n+1)
	}
	anonPeak := peak.stop()
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
	mapped, mappedRSS, err := mappedUnder(dir)
	if err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if memprofile != "" {
		if err := writeProfile(memprofile); err != nil {
			return err
		}
	}
	if err := tp.Shutdown(ctx); err != nil {
		return err
	}
	fmt.Printf("Benchmark%s/%s\t1\t%d VmHWM-B\t%d VmRSS-B\t%d RssAnon-B\t%d RssFile-B\t%d anonpeak-B\t%d HeapSys-B\t%d HeapInuse-B\t%d mapped-B\t%d mappedrss-B\t%.0f cpu-ns/span\t%.0f records/s\t%d dropped\n",
		name, processor, status[0], status[1], status[2], status[3], anonPeak, ms.HeapSys, ms.HeapInuse, mapped, mappedRSS, cpuPerSpan, achieved, dropped)
	return nil
}

// sampler keeps the largest RssAnon it has read.
type sampler struct {
	peak atomic.Int64
	done chan struct{}
	wg   sync.WaitGroup
}

// startSampling reads RssAnon every 100 ms until stop.
func startSampling() *sampler {
	s := &sampler{done: make(chan struct{})}
	s.sample()
	s.wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.sample()
			}
		}
	})
	return s
}

func (s *sampler) sample() {
	if v, err := procStatus("RssAnon"); err == nil && v > s.peak.Load() {
		s.peak.Store(v)
	}
}

// stop ends the sampling and returns the peak, the present included.
func (s *sampler) stop() int64 {
	close(s.done)
	s.wg.Wait()
	s.sample()
	return s.peak.Load()
}

func writeProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
		return kiB(value)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// mappedUnder returns the size of the memory mappings of files under dir
// (Badger's logs and tables), and how much of them is resident, from
// /proc/self/smaps. Nothing when dir is "".
func mappedUnder(dir string) (size, rss int64, err error) {
	if dir == "" {
		return 0, 0, nil
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header: address range, perms, offset, device,
			// inode, and its file, if any.
			in = len(fields) >= 6 && strings.HasPrefix(fields[5], dir+"/")
			continue
		}
		if !in {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "Size" && name != "Rss") {
			continue
		}
		v, err := kiB(value)
		if err != nil {
			return 0, 0, err
		}
		if name == "Size" {
			size += v
		} else {
			rss += v
		}
	}
	return size, rss, sc.Err()
}

// kiB parses a "  1234 kB" value of /proc into bytes.
func kiB(value string) (int64, error) {
	kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
	if err != nil {
		return 0, err
	}
	return kb << 10, nil
}
