package badgerstore

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// benchEntries returns n entries shaped like records: a key (a
// namespace, 0x00, session and seq: 33 bytes) and a 200-byte value.
func benchEntries(first, n int) []sessions.Entry {
	es := make([]sessions.Entry, n)
	value := bytes.Repeat([]byte{'v'}, 200)
	for i := range es {
		key := append([]byte("records/v1/bench\x00"), make([]byte, 8)...)
		key = binary.BigEndian.AppendUint64(key, uint64(first+i))
		es[i] = sessions.Entry{Key: key, Value: value}
	}
	return es
}

func BenchmarkWrite(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batch = 1000
	b.SetBytes(batch * 233)
	for i := 0; b.Loop(); i++ {
		if err := s.Write(benchEntries(i*batch, batch)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkScan(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 100_000
	for i := 0; i < n; i += 10_000 {
		if err := s.Write(benchEntries(i, 10_000)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n * 233)
	for b.Loop() {
		count := 0
		for _, err := range s.Scan([]byte("records/v1/bench\x00"), []byte("records/v1/bench\x01")) {
			if err != nil {
				b.Fatal(err)
			}
			count++
		}
		if count != n {
			b.Fatalf("scanned %d, want %d", count, n)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
}
