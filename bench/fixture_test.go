//go:build bench

package bench

import (
	"github.com/dgraph-io/badger/v4"

	"context"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// fixtureDir holds the stores that take seconds to build (a store of a
// million records), so that several `go test` runs of one bench/run share
// them. Empty: a temporary directory, removed at exit.
var fixtureDir = flag.String("fixtures", "", "directory caching the benchmark stores between runs (default: a temporary one)")

// records is how many records figures 4, 5 and 8 use.
const records = 1_000_000

func TestMain(m *testing.M) {
	flag.Parse()
	// The exporter reports a full queue (figure 1 fills it on purpose)
	// through otel.Handle, which by default logs: the figures count drops
	// in Stats instead.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	tmp := ""
	if *fixtureDir == "" {
		var err error
		if tmp, err = os.MkdirTemp("", "otelrecords-bench-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		*fixtureDir = tmp
	}
	code := m.Run()
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	os.Exit(code)
}

// arena holds many entries in two flat slices, so a million of them cost
// the garbage collector two objects instead of two million.
type arena struct {
	bytes []byte
	ends  []int // the end of each key, then of its value, in bytes
}

func (a *arena) add(key, value []byte) {
	a.bytes = append(a.bytes, key...)
	a.ends = append(a.ends, len(a.bytes))
	a.bytes = append(a.bytes, value...)
	a.ends = append(a.ends, len(a.bytes))
}

func (a *arena) len() int { return len(a.ends) / 2 }

// entry returns the i-th key and value; they share the arena's memory.
func (a *arena) entry(i int) (key, value []byte) {
	start := 0
	if i > 0 {
		start = a.ends[2*i-1]
	}
	k := a.bytes[start:a.ends[2*i]:a.ends[2*i]]
	v := a.bytes[a.ends[2*i]:a.ends[2*i+1]:a.ends[2*i+1]]
	return k, v
}

// captureStore is a sessions.Store that keeps what is written in an arena:
// the keys and value bytes an exporter writes, with no database under
// them.
type captureStore struct {
	mu sync.Mutex
	a  arena
}

func (c *captureStore) Write(es []sessions.Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range es {
		c.a.add(e.Key, e.Value)
	}
	return nil
}

func (c *captureStore) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(func(sessions.Entry, error) bool) {}
}

func (c *captureStore) DeleteRange([]byte, []byte, func([]byte) bool) (int, error) { return 0, nil }
func (c *captureStore) Close() error                                               { return nil }

// keptProvider returns a TracerProvider carrying an exporter into dir (or
// into store, when not nil) whose session is already kept: one Changed
// span, flushed, so every later span is written.
func keptProvider(tb testing.TB, dir string, store sessions.Store, opts ...exporter.Option) (*sdktrace.TracerProvider, *exporter.Exporter) {
	tb.Helper()
	if store != nil {
		opts = append(opts, exporter.WithStore(store))
	}
	exp, err := exporter.New(dir, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	// A mark, so that the kind the figures count holds only their spans.
	_, s := tp.Tracer("bench").Start(context.Background(), "keep", trace.WithAttributes(spanbridge.Changed()))
	s.End()
	if err := exp.ForceFlush(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if st := exp.Stats(); st.SessionsKept != 1 {
		tb.Fatalf("session not kept: %+v", st)
	}
	return tp, exp
}

// flushEvery is how many spans the persistence figures end between two
// ForceFlush calls: below the exporter's queue size, so nothing is
// dropped, and large enough that the flushes do not serialise the work.
const flushEvery = 50_000

// recordSpans ends n benchmark spans on tp, flushing every flushEvery,
// and fails unless every one of them was written.
func recordSpans(tb testing.TB, tp *sdktrace.TracerProvider, exp *exporter.Exporter, n int) {
	tb.Helper()
	tr := tp.Tracer("bench")
	ctx := context.Background()
	before := exp.Stats().Written
	for i := range n {
		workload.Span(ctx, tr, trace.WithAttributes(workload.Attrs(i)...))
		if i%flushEvery == flushEvery-1 {
			if err := exp.ForceFlush(ctx); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := exp.ForceFlush(ctx); err != nil {
		tb.Fatal(err)
	}
	st := exp.Stats()
	if st.Dropped != 0 || st.Written-before != int64(n) {
		tb.Fatalf("after %d spans: written %d, dropped %d (%+v): the figure needs every span written", n, st.Written-before, st.Dropped, st)
	}
}

var (
	captureOnce sync.Once
	captured    *arena
)

// capturedRecords returns the keys and values of a kept session of
// `records` benchmark spans, as the exporter writes them: a session row,
// then the records. The first process of a bench/run runs the exporter
// into a captureStore and writes what it captured into the records store
// (figures 5 and 8 read it); later ones read them back from there.
func capturedRecords(tb testing.TB) *arena {
	captureOnce.Do(func() {
		dir := filepath.Join(*fixtureDir, "records")
		if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
			captured = readStore(tb, dir)
			return
		}
		c := &captureStore{}
		tp, exp := keptProvider(tb, "", c)
		recordSpans(tb, tp, exp, records)
		if err := tp.Shutdown(context.Background()); err != nil {
			tb.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			tb.Fatal(err)
		}
		writeStore(tb, dir, &c.a)
		// A store cut short by a failed run is rebuilt, not reused.
		if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o600); err != nil {
			tb.Fatal(err)
		}
		captured = &c.a
	})
	if captured == nil {
		tb.Fatal("capturing the records failed in an earlier benchmark")
	}
	return captured
}

// readStore reads every entry under the records root of the store in dir.
func readStore(tb testing.TB, dir string) *arena {
	tb.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	a := &arena{}
	for e, err := range st.Scan([]byte(keys.Root+"/"), []byte(keys.Root+"0")) {
		if err != nil {
			tb.Fatal(err)
		}
		a.add(e.Key, e.Value)
	}
	return a
}

// recordsStore returns the directory of a store holding the captured
// session: `records` records of one kind, and its session row.
func recordsStore(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(*fixtureDir, "records")
	// Read the records only to build the store: a quarter of a gigabyte
	// in the heap would make figure 5's reader collect garbage less often
	// than it does in a real program.
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		capturedRecords(tb)
	}
	return dir
}

// rawRecordsStore returns the directory of a Badger database holding the
// records of recordsStore one entry each, written through Badger's
// WriteBatch with the store's options: Badger's ordinary path, which
// the raw references of figure 6 read. (A Store writes runs of records
// as chunks, which Badger alone would read as fewer, larger entries.)
func rawRecordsStore(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(*fixtureDir, "records-raw")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return dir
	}
	a := capturedRecords(tb)
	if err := os.RemoveAll(dir); err != nil {
		tb.Fatal(err)
	}
	db, err := badger.Open(workload.BadgerOptions(dir, false))
	if err != nil {
		tb.Fatal(err)
	}
	for lo := 0; lo < a.len(); lo += floorBatch {
		if err := floorWriteBatch(db, a, lo, min(lo+floorBatch, a.len())); err != nil {
			tb.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// writeStore writes the arena's entries into a new store in dir through
// the Store, in batches the size an exporter's flush writes.
func writeStore(tb testing.TB, dir string, a *arena) {
	tb.Helper()
	st, err := badgerstore.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	batch := make([]sessions.Entry, 0, 10_000)
	for i := range a.len() {
		k, v := a.entry(i)
		batch = append(batch, sessions.Entry{Key: k, Value: v})
		if len(batch) == cap(batch) || i == a.len()-1 {
			if err := st.Write(batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
}

// reportMedian reports the median of the durations as a metric: figures
// 6 and 8 quote medians, which one slow iteration (a compaction, a page
// fault on a shared machine) does not move.
func reportMedian(b *testing.B, ds []time.Duration, unit string) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	m := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		m = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	b.ReportMetric(float64(m.Nanoseconds()), unit)
}

// checkShutdown shuts the provider down and fails on its error.
func checkShutdown(tb testing.TB, tp *sdktrace.TracerProvider) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		tb.Fatal(err)
	}
}
