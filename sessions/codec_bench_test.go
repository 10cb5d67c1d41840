package sessions

import (
	"testing"
	"time"
)

// The hand-written codec against the library's, in one run, so that a
// shared machine's noise falls on both:
//
//	go test -run '^$' -bench 'Codec' -count 5 ./sessions/

// spanRecord is a small record, as a span of bench/ becomes.
var spanRecord = Stamped[Record]{
	Stamp: Stamp{Session: 1764672000123456789, Seq: 123456, Offset: 1234567890},
	Record: Record{
		Name: "lookup artifact", Wall: 2345 * time.Nanosecond,
		Attributes: Attrs{{"bench.key", StringValue("sha256:1000123456")}, {"bench.n", Int64Value(123456)}, {"bench.hit", BoolValue(true)}},
		TraceID:    TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		Scope:      Scope{Name: "bench"},
	},
}

func BenchmarkCodecEncode(b *testing.B) {
	for _, c := range []struct {
		name string
		v    Stamped[Record]
	}{{"span", spanRecord}, {"every", everyKind()}} {
		b.Run(c.name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				encodeRecord(c.v.Stamp, &c.v.Record)
			}
		})
		b.Run(c.name+"/library", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				encodeRecordLibrary(c.v.Stamp, &c.v.Record)
			}
		})
	}
}

func BenchmarkCodecDecode(b *testing.B) {
	for _, c := range []struct {
		name string
		v    Stamped[Record]
	}{{"span", spanRecord}, {"every", everyKind()}} {
		value, err := encodeRecord(c.v.Stamp, &c.v.Record)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range []struct {
			name   string
			decode func([]byte) (Stamped[Record], error)
		}{{"hand", decodeRecord}, {"library", decodeRecordLibrary}} {
			b.Run(c.name+"/"+d.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(value)))
				for b.Loop() {
					if _, err := d.decode(value); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
