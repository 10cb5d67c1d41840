package sessions_test

import (
	"bytes"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// A store travels between machines and is read as untrusted input
// (SPEC §8): no bytes may make a reader panic, hang or allocate without
// bound. These targets feed keys and values to the decoders; their seed
// corpora (testdata/fuzz/<target>/) hold real encoded keys, records of
// every value kind, session rows, and hostile items, and run in every
// `go test`. Fuzz one with
//
//	go test -run='^$' -fuzz=FuzzDecodeRecord -fuzztime=60s ./sessions/

// FuzzParseKey checks that ParseKey never panics, that a key it accepts is
// exactly the key RecordKey (or SessionKey) makes of what it returns, and
// that every key RecordKey and SessionKey make parses back.
func FuzzParseKey(f *testing.F) {
	f.Add([]byte("records/v1/autotune\x00\x18\x16\xc1\x1e\xef\x4e\xbf\x80\x00\x00\x00\x00\x00\x00\x00\x01"), "autotune", uint64(1735787045006000000), uint64(1))
	f.Fuzz(func(t *testing.T, key []byte, kind string, session, seq uint64) {
		if k, st, err := parseKey(key); err == nil {
			var again []byte
			if k == "sessions" {
				again = testsupport.SessionKey(st.Session)
			} else {
				again = testsupport.RecordKey(k, st)
			}
			if !bytes.Equal(again, key) {
				t.Fatalf("ParseKey(%q) = %q, %+v, which makes the key %q", key, k, st, again)
			}
		}
		st := sessions.Stamp{Session: sessions.SessionID(session), Seq: seq}
		if k, err := keys.CheckKind(kind); err == nil {
			gotKind, gotStamp, err := parseKey(testsupport.RecordKey(k, st))
			if err != nil || gotKind != k || gotStamp != st {
				t.Fatalf("ParseKey(RecordKey(%q, %+v)) = %q, %+v, %v", k, st, gotKind, gotStamp, err)
			}
		}
		gotKind, gotStamp, err := parseKey(testsupport.SessionKey(st.Session))
		if err != nil || gotKind != "sessions" || gotStamp != (sessions.Stamp{Session: st.Session}) {
			t.Fatalf("ParseKey(SessionKey(%d)) = %q, %+v, %v", st.Session, gotKind, gotStamp, err)
		}
	})
}

// FuzzDecodeRecord checks that DecodeRecord never panics; that it is
// differential against the library (SPEC §4): it decodes exactly the
// values the library decodes through Record's own fields and methods, to
// the same record; and that a value it decodes encodes, decodes again,
// and encodes to the same bytes (the encoding is deterministic, so equal
// bytes are the same record), which the library's encoding matches.
//
// It also checks the decoding budget (budget.go): decoding allocates within
// it, and the walk that charges a value accepts every value that decodes
// (it is never stricter than the decoder, but for the budget), and never
// panics.
func FuzzDecodeRecord(f *testing.F) {
	// Many small containers, each a byte: over budget, refused unread.
	f.Add(attrsOfArrays([]byte{0xa0}, 400))
	f.Add(attrsOfArrays([]byte{0xbf, 0xff}, 400))
	f.Add(attrsOfArrays([]byte{0xc6, 0xc6, 0x00}, 400))
	f.Add(recordWith("events", append(arrayOf(300), bytes.Repeat([]byte{0xa0}, 300)...)))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v sessions.Stamped[sessions.Record]
		var err error
		if n := allocatedBy(func() { v, err = sessions.DecodeRecord(b) }); int64(n) > sessions.DecodeBudget(len(b)) {
			t.Fatalf("decoding %d bytes allocated %d, over the budget of %d", len(b), n, sessions.DecodeBudget(len(b)))
		}
		werr := sessions.WalkBudget(b)
		plain, perr := sessions.DecodeRecordPlain(b)
		// Within the budget, the wire decoder and the library agree on
		// what decodes (past it, the wire decoder refuses what the library
		// would take, by design).
		if werr == nil && (err == nil) != (perr == nil) && len(b) <= keys.MaxValueSize {
			t.Fatalf("the wire decoder says %v, the library %v\n%x", err, perr, b)
		}
		if err != nil {
			return
		}
		if werr != nil {
			t.Fatalf("a value that decodes does not pass the budget's walk: %v", werr)
		}
		once, err := encodeRecord(v)
		if err != nil {
			t.Fatalf("a record that decodes does not encode: %v\n%#v", err, v)
		}
		// Compared by their encodings, which tell apart every field
		// (nil and empty sets too) and equate NaNs.
		if p, err := encodeRecord(plain); err != nil || !bytes.Equal(p, once) {
			t.Fatalf("the wire decoder and the library decode differently:\n%#v\n%#v (%v)", v, plain, err)
		}
		v2, err := sessions.DecodeRecord(once)
		if err != nil {
			t.Fatalf("a record's own encoding does not decode: %v\n%x", err, once)
		}
		// What our encoder made, the owned decoder (the records
		// processor's) reads in its one pass, to the same record.
		var own sessions.Stamped[sessions.Record]
		if len(once) <= keys.MaxValueSize && !sessions.DecodeOwn(once, false, &own) {
			t.Fatalf("the owned decoder does not read a value of our own encoder:\n%x", once)
		}
		if p, err := encodeRecord(own); len(once) <= keys.MaxValueSize && (err != nil || !bytes.Equal(p, once)) {
			t.Fatalf("the owned decoder and the wire decoder differ:\n%#v\n%#v (%v)", own, v2, err)
		}
		twice, err := encodeRecord(v2)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("decode and encode again changed the record:\n%x\n%x (%v)", once, twice, err)
		}
		if p, err := sessions.EncodeRecordPlain(v); err != nil || !bytes.Equal(p, once) {
			t.Fatalf("the wire encoder and the library encode differently:\n%x\n%x (%v)", once, p, err)
		}
		if v2.Stamp != v.Stamp || v2.Record.Name != v.Record.Name || v2.Record.Wall != v.Record.Wall ||
			len(v2.Record.Attributes) != len(v.Record.Attributes) || len(v2.Record.Events) != len(v.Record.Events) {
			t.Fatalf("round trip changed the record:\n%#v\n%#v", v, v2)
		}
	})
}

// FuzzDecodeSession is FuzzDecodeRecord for session rows.
func FuzzDecodeSession(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var s sessions.Session
		var err error
		if n := allocatedBy(func() { s, err = sessions.DecodeSession(b) }); int64(n) > sessions.DecodeBudget(len(b)) {
			t.Fatalf("decoding %d bytes allocated %d, over the budget of %d", len(b), n, sessions.DecodeBudget(len(b)))
		}
		werr := sessions.WalkBudget(b)
		if err != nil {
			return
		}
		if werr != nil {
			t.Fatalf("a row that decodes does not pass the budget's walk: %v", werr)
		}
		once, err := encodeSession(s)
		if err != nil {
			t.Fatalf("a session row that decodes does not encode: %v\n%#v", err, s)
		}
		s2, err := sessions.DecodeSession(once)
		if err != nil {
			t.Fatalf("a session row's own encoding does not decode: %v\n%x", err, once)
		}
		twice, err := encodeSession(s2)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("decode and encode again changed the row:\n%x\n%x (%v)", once, twice, err)
		}
		if s2.ID != s.ID || s2.Label != s.Label || s2.Process != s.Process || len(s2.Resource) != len(s.Resource) {
			t.Fatalf("round trip changed the row:\n%#v\n%#v", s, s2)
		}
	})
}

// everyField is a typed read of every kind of field a struct may give.
type everyField struct {
	Key      string        `record:"autotune.key"`
	Name     string        `record:",name"`
	Wall     time.Duration `record:",wall"`
	Tried    int           `record:"tried"`
	Small    int8          `record:"tried"`
	Count    uint16        `record:"tried"`
	Speedup  float32       `record:"speedup"`
	Exact    float64       `record:"speedup"`
	Cached   bool          `record:"cached"`
	Cands    []string      `record:"cands"`
	Ints     []int64       `record:"ints"`
	Bytes    []uint8       `record:"ints"`
	Floats   []float64     `record:"floats"`
	Flags    []bool        `record:"flags"`
	Any      any           `record:"cands"`
	Value    sessions.Value
	Unsigned uint `record:"ints"`
}

// FuzzTypedDecode checks that a typed read of any record never panics,
// and that what it fills holds what the record says, within the field's
// range.
func FuzzTypedDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := sessions.DecodeRecord(b)
		if err != nil {
			return
		}
		var got everyField
		if err := sessions.Decode(rec.Record, &got); err != nil {
			return // skipped and counted by Typed
		}
		if got.Name != rec.Record.Name || got.Wall != rec.Record.Wall {
			t.Fatalf("name and wall: %q %v, record %q %v", got.Name, got.Wall, rec.Record.Name, rec.Record.Wall)
		}
		if v, ok := rec.Record.Attributes.Get("tried"); ok {
			if n := v.AsInt64(); int64(got.Tried) != n || int64(got.Small) != n || int64(got.Count) != n {
				t.Fatalf("tried = %d, fields %d %d %d", n, got.Tried, got.Small, got.Count)
			}
		}
		if v, ok := rec.Record.Attributes.Get("speedup"); ok {
			want := v.AsFloat64()
			if got.Exact != want && !(math.IsNaN(want) && math.IsNaN(got.Exact)) {
				t.Fatalf("speedup = %v, field %v", want, got.Exact)
			}
		}
	})
}

// TestHostileValuesAreCheap decodes small values whose headers claim far
// more than they hold — an array of 2^20 elements, a map of 2^17 pairs, a
// string of 4 GiB, deep nesting — and checks that each fails, and that
// together they make the decoder allocate little.
func TestHostileValuesAreCheap(t *testing.T) {
	hostile := map[string][]byte{
		// {"stamp": {}, "record": {"attrs": {"a": [<2^20 elements>...]}}}
		"array of 2^20 claimed": append(recordWithAttr("a"), 0x9a, 0x00, 0x10, 0x00, 0x00, 0x00),
		"array of 2^32 claimed": append(recordWithAttr("a"), 0x9b, 0, 0, 0, 1, 0, 0, 0, 0, 0x00),
		"map of 2^17 claimed":   append([]byte{0xa2, 0x65, 's', 't', 'a', 'm', 'p', 0xa0, 0x66, 'r', 'e', 'c', 'o', 'r', 'd', 0xa1, 0x65, 'a', 't', 't', 'r', 's'}, 0xba, 0x00, 0x02, 0x00, 0x00, 0x61, 'k', 0x00),
		"string of 4 GiB":       append(recordWithAttr("a"), 0x7b, 0, 0, 0, 1, 0, 0, 0, 0, 'x'),
		"bytes of 2^63":         append(recordWithAttr("a"), 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'x'),
		"nested 100000 deep":    append(recordWithAttr("a"), bytes.Repeat([]byte{0x81}, 100000)...),
		"indefinite nesting":    append(recordWithAttr("a"), bytes.Repeat([]byte{0x9f}, 100000)...),
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for name, b := range hostile {
		if _, err := sessions.DecodeRecord(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
		if _, err := sessions.DecodeSession(b); err == nil {
			t.Errorf("%s: decoded as a session row", name)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("decoding %d small hostile values allocated %d bytes", len(hostile), n)
	}
}

// recordWithAttr returns the start of a record value whose one attribute,
// key, has the value that is appended to it.
func recordWithAttr(key string) []byte {
	b := []byte{0xa2, 0x65, 's', 't', 'a', 'm', 'p', 0xa0, 0x66, 'r', 'e', 'c', 'o', 'r', 'd', 0xa1, 0x65, 'a', 't', 't', 'r', 's', 0xa1}
	b = append(b, 0x60+byte(len(key)))
	return append(b, key...)
}
