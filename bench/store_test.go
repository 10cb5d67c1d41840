//go:build bench

package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/bench/internal/workload"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// BenchmarkPersist is figure 7 (an extra one): records per second from span end to
// durable (ForceFlush returned) in a kept session, against raw Badger
// writing the same keys and value bytes in one WriteBatch with the store's
// options. Run it with -benchtime 1x: one op is a million records.
//
// The clock runs from the span's end: our OnEnd is handed spans that were
// started (and stamped by our OnStart) and ended beforehand, flushEvery at
// a time, with the clock stopped, so the SDK's cost of making a span is in
// neither number. The sub-benchmark "spans" times the whole of it instead,
// the SDK's span included: an informational line, what a program sees.
func BenchmarkPersist(b *testing.B) {
	b.Run("otelrecords", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			// Opening the store and keeping the session come before the
			// clock starts, as Badger's open does for the reference.
			tp, exp := keptProvider(b, filepath.Join(b.TempDir(), "store"), nil)
			ended := &endedSpans{exp: exp}
			src := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ended))
			tr := src.Tracer("bench")
			ctx := context.Background()
			for done := 0; done < records; done += flushEvery {
				ended.spans = ended.spans[:0]
				for i := range min(flushEvery, records-done) {
					workload.Span(ctx, tr, trace.WithAttributes(workload.Attrs(done+i)...))
				}
				b.StartTimer()
				for _, s := range ended.spans {
					exp.OnEnd(s)
				}
				if err := exp.ForceFlush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
			}
			if st := exp.Stats(); st.Dropped != 0 || st.Written != records+1 {
				b.Fatalf("after %d spans: %+v; the figure needs every span written", records, st)
			}
			checkShutdown(b, tp)
		}
		b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("spans", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			tp, exp := keptProvider(b, filepath.Join(b.TempDir(), "store"), nil)
			b.StartTimer()
			recordSpans(b, tp, exp, records)
			b.StopTimer()
			checkShutdown(b, tp)
		}
		b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("badger", func(b *testing.B) {
		a := capturedRecords(b)
		for range b.N {
			b.StopTimer()
			db, err := badger.Open(workload.BadgerOptions(filepath.Join(b.TempDir(), "store"), false))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			wb := db.NewWriteBatch()
			for i := range a.len() {
				k, v := a.entry(i)
				if err := wb.Set(k, v); err != nil {
					b.Fatal(err)
				}
			}
			if err := wb.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(a.len()*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// endedSpans is a span processor that hands each span's start to our
// exporter, as a provider carrying it would, and keeps the ended span
// instead of handing it on: figure 4 hands them to OnEnd itself, with the
// clock running.
type endedSpans struct {
	exp   *exporter.Exporter
	spans []sdktrace.ReadOnlySpan
}

func (p *endedSpans) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { p.exp.OnStart(ctx, s) }
func (p *endedSpans) OnEnd(s sdktrace.ReadOnlySpan)                         { p.spans = append(p.spans, s) }
func (p *endedSpans) Shutdown(context.Context) error                        { return nil }
func (p *endedSpans) ForceFlush(context.Context) error                      { return nil }

// benchRecord is the typed form of a benchmark record, as a program reading
// its records back would declare it.
type benchRecord struct {
	Key  string        `record:"bench.key"`
	N    int64         `record:"bench.n"`
	Hit  bool          `record:"bench.hit"`
	Wall time.Duration `record:",wall"`
}

// BenchmarkRead is figure 6: a typed read of a million records through the
// Records reader, against a raw Badger prefix iteration over the same keys
// and values, one entry each (rawRecordsStore), that copies each value. The
// stores are opened before the clock starts.
func BenchmarkRead(b *testing.B) {
	dir := recordsStore(b)
	b.Run("otelrecords", func(b *testing.B) {
		r := openRecords(b, dir)
		perRecords(b, func() {
			n := 0
			var sum int64
			for rec, err := range sessions.Typed[benchRecord](r, workload.Kind) {
				if err != nil {
					b.Fatal(err)
				}
				sum += rec.Record.N
				n++
			}
			if n != records || r.Skipped() != 0 {
				b.Fatalf("read %d records, skipped %d; want %d", n, r.Skipped(), records)
			}
		})
	})
	b.Run("badger", func(b *testing.B) {
		db := openBadger(b, rawRecordsStore(b))
		prefix := []byte(keys.Namespace(workload.Kind) + "\x00")
		perRecords(b, func() {
			n := 0
			var buf []byte
			err := db.View(func(txn *badger.Txn) error {
				opts := badger.DefaultIteratorOptions
				opts.Prefix = prefix
				it := txn.NewIterator(opts)
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					var err error
					if buf, err = it.Item().ValueCopy(buf[:0]); err != nil {
						return err
					}
					n++
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			if n != records {
				b.Fatalf("read %d records, want %d", n, records)
			}
		})
	})
}

// BenchmarkCount is the info line of figure 6: counting every session's
// records per kind as `records sessions` does (its sessions, then
// Records.Counts, which reads keys only), against raw
// Badger iterating the same keys (one entry each, rawRecordsStore)
// without their values and counting them
// by kind and session.
func BenchmarkCount(b *testing.B) {
	dir := recordsStore(b)
	b.Run("otelrecords", func(b *testing.B) {
		r := openRecords(b, dir)
		perRecords(b, func() {
			counts, err := r.Counts()
			if err != nil {
				b.Fatal(err)
			}
			for s, err := range r.Sessions() {
				if err != nil {
					b.Fatal(err)
				}
				count(counts, s.ID, "")
			}
			checkCounts(b, counts)
		})
	})
	b.Run("badger", func(b *testing.B) {
		db := openBadger(b, rawRecordsStore(b))
		perRecords(b, func() {
			counts := map[sessions.SessionID]map[string]int{}
			err := db.View(func(txn *badger.Txn) error {
				opts := badger.DefaultIteratorOptions
				opts.PrefetchValues = false
				opts.Prefix = []byte(keys.Root + "/")
				it := txn.NewIterator(opts)
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					key := it.Item().Key()
					if keys.IsSession(key) {
						count(counts, sessions.SessionID(binary.BigEndian.Uint64(key[len(key)-8:])), "")
						continue
					}
					kind, session, _, err := keys.Parse(key)
					if err != nil {
						return err
					}
					count(counts, sessions.SessionID(session), kind)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			checkCounts(b, counts)
		})
	})
}

// perRecords runs read b.N times, each a read of the records store's
// million records, and reports records read per second.
func perRecords(b *testing.B, read func()) {
	b.ResetTimer()
	for range b.N {
		read()
	}
	b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
}

// count counts a record of kind in session, or with kind "" only the
// session.
func count(counts map[sessions.SessionID]map[string]int, session sessions.SessionID, kind string) {
	c := counts[session]
	if c == nil {
		c = map[string]int{}
		counts[session] = c
	}
	if kind != "" {
		c[kind]++
	}
}

// checkCounts fails unless counts holds one session with the records of
// the records store.
func checkCounts(b *testing.B, counts map[sessions.SessionID]map[string]int) {
	total := 0
	for _, c := range counts {
		total += c[workload.Kind]
	}
	if len(counts) != 1 || total != records {
		b.Fatalf("counted %d sessions, %d records of %s; want 1 and %d", len(counts), total, workload.Kind, records)
	}
}

// openRecords returns a reader of the store in dir, opened read-only
// until the benchmark ends.
func openRecords(b *testing.B, dir string) *sessions.Records {
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return sessions.NewRecords(st)
}

// openBadger returns the Badger database in dir, opened read-only with the
// store's options until the benchmark ends.
func openBadger(b *testing.B, dir string) *badger.DB {
	db, err := badger.Open(workload.BadgerOptions(dir, true))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// pruneKinds are the kinds a figure-6 session's records are spread over.
var pruneKinds = []string{"autotune", "compile", "marks"}

// perSession is how many records each session of figure 6 holds.
const perSession = 10_000

// BenchmarkPrune is figure 8 (an extra one): pruning the oldest session (10,000 records
// over 3 kinds) from a store of 10 sessions and from one of 100. Each op
// prunes once, from a fresh copy of a store built once: no op walks the
// tombstones an earlier op left. Only the prune is timed; the clone, the open and the
// close are not. Run it with a fixed -benchtime (5x): the metric is the
// median prune.
func BenchmarkPrune(b *testing.B) {
	a := capturedRecords(b)
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			pristine := pruneStore(b, a, n)
			var ds []time.Duration
			b.StopTimer()
			for i := range b.N {
				dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
				if err := cloneStore(pristine, dir); err != nil {
					b.Fatal(err)
				}
				st, err := badgerstore.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				r := sessions.NewRecords(st)
				b.StartTimer()
				start := time.Now()
				pruned, err := r.Prune(n - 1)
				ds = append(ds, time.Since(start))
				b.StopTimer()
				if err != nil || pruned != 1 {
					b.Fatalf("Prune = %d, %v; want 1 session", pruned, err)
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
			}
			reportMedian(b, ds, "median-ns/prune")
		})
	}
}

// pruneStore returns the directory of a closed store of n sessions of
// perSession records each, building it the first time.
func pruneStore(b *testing.B, a *arena, n int) string {
	dir := filepath.Join(*fixtureDir, fmt.Sprintf("prune-%d", n))
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil { // cut short by an earlier run
		b.Fatal(err)
	}
	st, err := badgerstore.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	for id := 1; id <= n; id++ {
		writeSession(b, st, a, uint64(id))
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return dir
}

// cloneStore copies the closed Badger store in src to dst, file by file.
// (Hard links would be cheaper, but Badger truncates a table file before
// it deletes it, which would empty the original's too.)
func cloneStore(src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	files, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := copyFile(filepath.Join(src, f.Name()), filepath.Join(dst, f.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeSession writes a session row and perSession records, round-robin
// over pruneKinds, with the values of captured records.
func writeSession(tb testing.TB, st sessions.Store, a *arena, id uint64) {
	tb.Helper()
	row, err := sessions.Session{ID: sessions.SessionID(id), Label: "prune", OS: "linux", Arch: "amd64"}.MarshalCBOR()
	if err != nil {
		tb.Fatal(err)
	}
	es := []sessions.Entry{{Key: testsupport.SessionKey(sessions.SessionID(id)), Value: row}}
	for seq := range perSession {
		_, v := a.entry(seq % a.len())
		key := binary.BigEndian.AppendUint64([]byte(keys.Namespace(pruneKinds[seq%len(pruneKinds)])+"\x00"), id)
		key = binary.BigEndian.AppendUint64(key, uint64(seq))
		es = append(es, sessions.Entry{Key: key, Value: v})
	}
	if err := st.Write(es); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkOpen is figure 9 (an extra one): open and close of an existing
// store of a million records, read-write and read-only, through the
// Store and through raw Badger with the same options. Run it with a fixed
// -benchtime (10x); each op opens and closes the store once each way, in
// turns whose order rotates op by op (a store's page cache and Badger's
// files move with every read-write open, so a way that always ran first
// or last would be measured on another store), and the metrics are the
// medians of each way:
//
//   - otelrecords: the Store opened again in one process, as a writer's;
//   - first: a process's first open, as a records command's, which finds
//     in the cache the tables earlier processes found sound
//     (internal/store/badgerfmt);
//   - unseen: the first open of a store never checked on this machine
//     (copied from another), every table read;
//   - badger: Badger alone.
func BenchmarkOpen(b *testing.B) {
	dir := recordsStore(b)
	for _, mode := range []struct {
		name     string
		readOnly bool
	}{{"rw", false}, {"ro", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var opts []badgerstore.Option
			if mode.readOnly {
				opts = append(opts, badgerstore.WithReadOnly())
			}
			ways := []string{"otelrecords", "first", "unseen", "badger"}
			ds := make(map[string][]time.Duration, len(ways))
			for i := range b.N {
				for j := range ways {
					way := ways[(i+j)%len(ways)]
					switch way {
					case "first":
						badgerfmt.ForgetSound()
					case "unseen":
						badgerfmt.ForgetSoundEverywhere(dir)
					}
					start := time.Now()
					var err error
					if way == "badger" {
						var db *badger.DB
						if db, err = badger.Open(workload.BadgerOptions(dir, mode.readOnly)); err == nil {
							err = db.Close()
						}
					} else {
						var st *badgerstore.Store
						if st, err = badgerstore.Open(dir, opts...); err == nil {
							err = st.Close()
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					ds[way] = append(ds[way], time.Since(start))
				}
			}
			for _, way := range ways {
				reportMedian(b, ds[way], way+"-ns/open")
			}
		})
	}
}
