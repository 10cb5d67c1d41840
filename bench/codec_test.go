//go:build bench

package bench

import (
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// benchBody is the record a benchmark span becomes (figures 1, 3, 4, 5):
// what the profiles of those figures spend their encoding and decoding on.
var benchBody = sessions.Stamped[sessions.Record]{
	Stamp: sessions.Stamp{Session: 1764672000123456789, Seq: 123456, Offset: 1234567890},
	Record: sessions.Record{
		Name: "lookup artifact",
		Wall: 2345 * time.Nanosecond,
		Attributes: sessions.Attrs{
			{Key: "bench.key", Value: sessions.StringValue("sha256:1000123456")},
			{Key: "bench.n", Value: sessions.Int64Value(123456)},
			{Key: "bench.hit", Value: sessions.BoolValue(true)},
		},
		TraceID: sessions.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  sessions.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		Scope:   sessions.Scope{Name: "bench"},
	},
}

// BenchmarkEncodeRecord is a diagnostic, not a figure: the cost of one
// record's CBOR encoding, which the exporter pays for every span.
func BenchmarkEncodeRecord(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sessions.EncodeRecord(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecord is a diagnostic, not a figure: the cost of one
// record's CBOR decoding, which every read pays.
func BenchmarkDecodeRecord(b *testing.B) {
	v, err := sessions.EncodeRecord(benchBody)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sessions.DecodeRecord(v); err != nil {
			b.Fatal(err)
		}
	}
}
