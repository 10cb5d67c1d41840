package spool_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

// BenchmarkWrite200k spools 200,000 records of 200-byte values, as a
// Shutdown with a large backlog on a busy store does: how long the spool
// takes sizes what Shutdown keeps back for it (BENCHMARKS.md).
func BenchmarkWrite200k(b *testing.B) {
	const n = 200_000
	es := make([]sessions.Entry, n)
	value := make([]byte, 200)
	for i := range es {
		es[i] = sessions.Entry{Key: keys.Record("autotune", 1, uint64(i)), Value: value}
	}
	b.SetBytes(int64(n * (len(es[0].Key) + len(value))))
	for i := 0; b.Loop(); i++ {
		if err := spool.Write(filepath.Join(b.TempDir(), fmt.Sprint(i)), es); err != nil {
			b.Fatal(err)
		}
	}
}
