package chunk

import (
	"bytes"
	"slices"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// FuzzDecodeChunk checks that Decode never panics and gives records
// in seq order within the chunk's bounds, whatever the bytes; and that a
// chunk Encode made decodes to the records it was made of.
func FuzzDecodeChunk(f *testing.F) {
	var run []sessions.Entry
	for i := range 5 {
		run = append(run, sessions.Entry{Key: keys.Record("k", 7, uint64(3+2*i)), Value: bytes.Repeat([]byte{byte(i)}, i*10)})
	}
	c := Encode(run)
	f.Add(c.Value, uint64(3), uint64(11))
	f.Add([]byte{Version}, uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, v []byte, from, to uint64) {
		recs, _, err := Decode(v, from, to, nil, nil)
		if err != nil {
			return
		}
		for i, r := range recs {
			if r.Seq < from || r.Seq > to || (i > 0 && r.Seq <= recs[i-1].Seq) {
				t.Fatalf("record %d at seq %d, out of [%d, %d] or of order", i, r.Seq, from, to)
			}
		}
	})
	recs, _, err := Decode(c.Value, 3, 11, nil, nil)
	if err != nil || len(recs) != len(run) {
		f.Fatalf("Decode(Encode) = %d records, %v", len(recs), err)
	}
	for i, r := range recs {
		if _, _, seq, _ := keys.Parse(run[i].Key); seq != r.Seq || !slices.Equal(r.Value, run[i].Value) {
			f.Fatalf("record %d: seq %d %q, want %d %q", i, r.Seq, r.Value, seq, run[i].Value)
		}
	}
}

// A session's tally, written in a batch among its records, is never put
// in a chunk: it is no record, and its key parses as no chunk's.
func TestTallyIsNeverChunked(t *testing.T) {
	tally := sessions.Entry{Key: keys.Tally(7, 99), Value: []byte{0xa0}}
	es := []sessions.Entry{
		{Key: keys.Record("k", 7, 1), Value: []byte{1}},
		{Key: keys.Record("k", 7, 2), Value: []byte{2}},
		tally,
		{Key: keys.Record("k", 7, 3), Value: []byte{3}},
		{Key: keys.Record("k", 7, 4), Value: []byte{4}},
	}
	out, counts := Chunked(es)
	if len(out) != 3 || !bytes.Equal(out[1].Key, tally.Key) || !slices.Equal(counts, []int{2, 1, 2}) {
		t.Fatalf("chunked into %d entries %v", len(out), counts)
	}
	if _, _, _, ok := ParseKey(tally.Key); ok {
		t.Fatal("a tally's key parses as a chunk's")
	}
	if _, _, ok := RecordKey(tally.Key); ok {
		t.Fatal("a tally's key parses as a record's")
	}
}
