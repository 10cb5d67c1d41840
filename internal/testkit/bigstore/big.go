// Package bigstore builds Badger stores of hundreds of megabytes through
// the real Recorder, fast, and measures the peak anonymous memory of a
// child process: for the tests and benchmarks that check that a reader's
// memory follows its work and not the store's size (issue 22). Tests
// (cmd/records) and the view benchmark's programs (bench/cmd/bigstore,
// bench/cmd/peakanon) share it.
package bigstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// BigSpec says what BuildBig writes: sessions of records of kind "work"
// whose spans form a tree, each with a payload attribute of ValueBytes,
// and every HugeEvery-th record a payload of HugeBytes instead (none when
// HugeEvery is 0). Bytes is the payload written in all, which the store's
// size follows; Records, when not 0, is how many records each session
// holds instead, whatever their payload (the views' memory follows a
// session's records, not its bytes).
type BigSpec struct {
	Bytes      int64
	Records    int
	Sessions   int
	ValueBytes int
	HugeEvery  int
	HugeBytes  int
}

// DefaultBig is the shape of the big stores of the tests and of
// bench/run's view figures: ordinary records of 1 KiB and one in 200 of
// 2 MiB, in 4 sessions, so that a view meets both many records and huge
// values.
func DefaultBig(bytes int64) BigSpec {
	return BigSpec{Bytes: bytes, Sessions: 4, ValueBytes: 1 << 10, HugeEvery: 200, HugeBytes: 2 << 20}
}

// BuildBig writes a Badger store at dir as spec says, through the
// Recorder, one session after the other. Payloads are random letters, so
// the store's compression does not shrink them.
func BuildBig(dir string, spec BigSpec) error {
	if spec.Sessions < 1 || spec.ValueBytes < 1 {
		return fmt.Errorf("BuildBig: need sessions and a value size, got %+v", spec)
	}
	// One pool of random letters, sliced at random offsets: generating
	// every payload afresh would cost more than writing it.
	huge := max(spec.HugeBytes, spec.ValueBytes)
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]byte, 2*huge)
	for i := range pool {
		pool[i] = 'a' + byte(rng.IntN(26))
	}
	per := spec.Bytes / int64(spec.Sessions)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for s := range spec.Sessions {
		if err := bigSession(func() (sessions.Store, error) { return badgerstore.Open(dir) }, spec, per, start.Add(time.Duration(s)*time.Hour), pool, rng); err != nil {
			return err
		}
	}
	return nil
}

func bigSession(open func() (sessions.Store, error), spec BigSpec, bytes int64, start time.Time, pool []byte, rng *rand.Rand) error {
	at := start
	rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, Label: "big"}, open, func() time.Time { return at })
	var trace sessions.TraceID
	binary.BigEndian.PutUint64(trace[:], uint64(start.UnixNano()))
	var written int64
	for i := 0; spec.Records > 0 && i < spec.Records || spec.Records <= 0 && written < bytes; i++ {
		n := spec.ValueBytes
		if spec.HugeEvery > 0 && i%spec.HugeEvery == spec.HugeEvery-1 {
			n = spec.HugeBytes
		}
		at = start.Add(time.Duration(i) * time.Millisecond)
		st, ok := rec.Stamp(at)
		if !ok {
			return fmt.Errorf("BuildBig: record %d not stamped", i)
		}
		off := rng.IntN(len(pool) - n + 1)
		body := sessions.Record{
			Name:       fmt.Sprintf("step %d", i%100),
			Wall:       time.Duration(1+i%7) * time.Millisecond,
			Attributes: sessions.Attrs{{Key: "payload", Value: sessions.StringValue(string(pool[off : off+n]))}},
			TraceID:    trace,
			SpanID:     spanID(i),
		}
		if i > 0 {
			body.ParentSpanID = spanID((i - 1) / 4)
		}
		effect := sessions.Observed
		if i == 0 || i%50 == 0 {
			effect = sessions.Changed
		}
		if err := rec.Record("work", effect, st, body); err != nil {
			return fmt.Errorf("BuildBig: record %d: %w", i, err)
		}
		written += int64(n)
		if rec.Full() {
			if err := rec.Flush(context.Background()); err != nil {
				return fmt.Errorf("BuildBig: flush: %w", err)
			}
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		return fmt.Errorf("BuildBig: close: %w", err)
	}
	return nil
}

func spanID(i int) sessions.SpanID {
	var id sessions.SpanID
	binary.BigEndian.PutUint64(id[:], uint64(i)+1)
	return id
}

var bigStores = struct {
	sync.Mutex
	root string
	dirs map[BigSpec]string
}{dirs: map[BigSpec]string{}}

// BigStore returns the directory of a store built by BuildBig(spec), built
// once per test process and shared by its tests: a 250 MB store takes
// seconds to build, and tests only read it. RemoveBigStores, from
// TestMain, deletes them.
func BigStore(t testing.TB, spec BigSpec) string {
	t.Helper()
	bigStores.Lock()
	defer bigStores.Unlock()
	if dir, ok := bigStores.dirs[spec]; ok {
		return dir
	}
	if bigStores.root == "" {
		root, err := os.MkdirTemp("", "otelrecords-big-")
		if err != nil {
			t.Fatal(err)
		}
		bigStores.root = root
	}
	dir := filepath.Join(bigStores.root, fmt.Sprint(len(bigStores.dirs)))
	t0 := time.Now()
	if err := BuildBig(dir, spec); err != nil {
		t.Fatal(err)
	}
	t.Logf("built a store of %d MB in %v", DirBytes(t, dir)>>20, time.Since(t0).Round(time.Millisecond))
	bigStores.dirs[spec] = dir
	return dir
}

// RemoveBigStores deletes the stores BigStore built. Call it from TestMain
// after the tests ran.
func RemoveBigStores() {
	bigStores.Lock()
	defer bigStores.Unlock()
	if bigStores.root != "" {
		os.RemoveAll(bigStores.root)
	}
	bigStores.root, bigStores.dirs = "", map[BigSpec]string{}
}

// DirBytes returns the size of the files under dir, in bytes.
func DirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && !d.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
