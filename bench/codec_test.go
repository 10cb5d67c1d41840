//go:build bench

package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
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
		if _, err := benchBody.MarshalCBOR(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecord is a diagnostic, not a figure: the cost of one
// record's CBOR decoding, which every read pays (read through Records
// from a one-entry MemStore, so it includes that small overhead).
func BenchmarkDecodeRecord(b *testing.B) {
	v, err := benchBody.MarshalCBOR()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(v); err != nil {
			b.Fatal(err)
		}
	}
}

// decodeRecord decodes one stored record value as a reader does: through
// Records, from a store holding only it.
func decodeRecord(v []byte) (sessions.Stamped[sessions.Record], error) {
	store := sessions.NewMemStore()
	if err := store.Write([]sessions.Entry{{Key: testsupport.RecordKey("bench", benchBody.Stamp), Value: v}}); err != nil {
		return sessions.Stamped[sessions.Record]{}, err
	}
	for rec, err := range sessions.NewRecords(store).All("bench") {
		return rec, err
	}
	return sessions.Stamped[sessions.Record]{}, errors.New("the record did not decode")
}
