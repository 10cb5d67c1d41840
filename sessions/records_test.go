package sessions_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

func put(t *testing.T, s sessions.Store, key []byte, value []byte) {
	t.Helper()
	if err := s.Write([]sessions.Entry{{Key: key, Value: value}}); err != nil {
		t.Fatal(err)
	}
}

func putRecord(t *testing.T, s sessions.Store, kind string, id sessions.SessionID, seq uint64, rec sessions.Record) {
	t.Helper()
	st := sessions.Stamp{Session: id, Seq: seq}
	v, err := encodeRecord(sessions.Stamped[sessions.Record]{Stamp: st, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, testsupport.RecordKey(kind, st), v)
}

func putSession(t *testing.T, s sessions.Store, id sessions.SessionID) {
	t.Helper()
	v, err := encodeSession(sessions.Session{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, testsupport.SessionKey(id), v)
}

func TestPruneTakesOrphansOfPrunedSessions(t *testing.T) {
	s := sessions.NewMemStore()
	// Sessions 10, 20, 30 have rows. Session 15's row was pruned by another
	// process while it ran; it went on writing.
	for _, id := range []sessions.SessionID{10, 20, 30} {
		putSession(t, s, id)
		putRecord(t, s, "compile", id, 0, sessions.Record{Name: fmt.Sprint(id)})
	}
	putRecord(t, s, "compile", 15, 3, sessions.Record{Name: "orphan15"})
	// Keys under the root that do not parse are left alone, even inside
	// the range a prune deletes.
	put(t, s, []byte(keys.Root+"/compile\x00\x00\x00"), []byte("x"))
	put(t, s, []byte(keys.Root+"/compile\x00short"), []byte("x"))

	r := sessions.NewRecords(s)
	n, err := r.Prune(1)
	if err != nil || n != 2 {
		t.Fatalf("Prune(1) = %d, %v; want 2", n, err)
	}
	if got := names(t, s, "compile"); !slices.Equal(got, []string{"30"}) {
		t.Fatalf("compile after prune = %q, want [30]: the orphan of session 15 goes", got)
	}
	if s.Len() != 4 {
		t.Fatalf("%d entries left, want 4: session 30's row and record, and two keys that do not parse", s.Len())
	}
}

func TestPruneKeepsOrphansAboveNewestPruned(t *testing.T) {
	s := sessions.NewMemStore()
	for _, id := range []sessions.SessionID{10, 20, 30} {
		putSession(t, s, id)
	}
	putRecord(t, s, "autotune", 25, 1, sessions.Record{Name: "orphan25"})
	putRecord(t, s, "autotune", 15, 1, sessions.Record{Name: "orphan15"})
	put(t, s, []byte(keys.Root+"/junk"), []byte("x"))
	n, err := sessions.NewRecords(s).Prune(1)
	if err != nil || n != 2 {
		t.Fatalf("Prune(1) = %d, %v", n, err)
	}
	if got := names(t, s, "autotune"); !slices.Equal(got, []string{"orphan25"}) {
		t.Fatalf("autotune = %q, want only the orphan above the newest pruned session (20)", got)
	}
	found := false
	for e := range s.Scan([]byte(keys.Root+"/junk"), []byte(keys.Root+"/junl")) {
		found = string(e.Key) == keys.Root+"/junk"
	}
	if !found {
		t.Fatal("prune deleted a key that does not parse")
	}
}

func TestPruneCostFollowsWhatItDeletes(t *testing.T) {
	touched := func(sessionsInStore int) int {
		s := testsupport.NewOpStore()
		for i := range sessionsInStore {
			id := sessions.SessionID(i + 1)
			putSession(t, s.MemStore, id)
			for seq := range 50 {
				putRecord(t, s.MemStore, []string{"a", "b", "c"}[seq%3], id, uint64(seq), sessions.Record{})
			}
		}
		s.Touched = 0
		n, err := sessions.NewRecords(s).Prune(sessionsInStore - 1)
		if err != nil || n != 1 {
			t.Fatalf("Prune = %d, %v", n, err)
		}
		return s.Touched
	}
	small, large := touched(10), touched(100)
	// Deleting one session's 50 records touches those 50, the session rows
	// (a small list) and one key per kind — not the other sessions' records.
	if small > 50+10+10 || large > 50+100+10 {
		t.Fatalf("pruning one session touched %d entries in a store of 10 sessions and %d in one of 100; want about 50 + sessions", small, large)
	}
}

func TestPruneKeepZeroAndNothingToDo(t *testing.T) {
	s := sessions.NewMemStore()
	putSession(t, s, math.MaxUint64)
	putRecord(t, s, "a", math.MaxUint64, 0, sessions.Record{})
	r := sessions.NewRecords(s)
	if n, err := r.Prune(1); n != 0 || err != nil {
		t.Fatalf("Prune(1) of one session = %d, %v; want 0", n, err)
	}
	if n, err := r.Prune(0); n != 1 || err != nil {
		t.Fatalf("Prune(0) = %d, %v; want 1", n, err)
	}
	if s.Len() != 0 {
		t.Fatalf("Prune(0) left %d entries (max id edge case)", s.Len())
	}
}

func TestReadSkipsAndCountsUndecodable(t *testing.T) {
	s := sessions.NewMemStore()
	putSession(t, s, 1)
	put(t, s, testsupport.SessionKey(2), []byte{0xff, 0x00})
	putRecord(t, s, "compile", 1, 0, sessions.Record{Name: "good0"})
	put(t, s, testsupport.RecordKey("compile", sessions.Stamp{Session: 1, Seq: 1}), []byte("not cbor"))
	putRecord(t, s, "compile", 1, 2, sessions.Record{Name: "good2"})
	// A map where an attribute value should be.
	put(t, s, testsupport.RecordKey("compile", sessions.Stamp{Session: 1, Seq: 3}), []byte("\xa2\x65stamp\xa0\x66record\xa2\x64name\x61x\x65attrs\xa1\x61k\xa1\x61a\x01"))
	r := sessions.NewRecords(s)
	if got := names(t, s, "compile"); !slices.Equal(got, []string{"good0", "good2"}) {
		t.Fatalf("compile = %q", got)
	}
	n := 0
	for _, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range r.All("compile") {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 || r.Skipped() != 3 {
		t.Fatalf("sessions read %d, skipped %d; want 1 read and 3 skipped (1 row, 2 records)", n, r.Skipped())
	}
}

type tune struct {
	Key     string        `record:"autotune.key"`
	Winner  string        `record:"winner"`
	Tried   []string      `record:"candidates"`
	Runs    uint8         `record:"runs"`
	Best    float64       `record:"best_ms"`
	Cached  bool          `record:"cached"`
	Name    string        `record:",name"`
	Wall    time.Duration `record:",wall"`
	Other   sessions.Value
	Ignored string `record:"-"`
}

func TestTypedRead(t *testing.T) {
	s := sessions.NewMemStore()
	attrs := func(runs int64) sessions.Attrs {
		return sessions.Attrs{
			{Key: "autotune.key", Value: sessions.StringValue("matmul/128")},
			{Key: "winner", Value: sessions.StringValue("tiled")},
			{Key: "candidates", Value: sessions.SliceValue([]string{"naive", "tiled"})},
			{Key: "runs", Value: sessions.Int64Value(runs)},
			{Key: "best_ms", Value: sessions.Int64Value(3)},
			{Key: "cached", Value: sessions.BoolValue(true)},
			{Key: "Other", Value: sessions.Float64Value(1.5)},
			{Key: "Ignored", Value: sessions.StringValue("x")},
		}
	}
	putRecord(t, s, "autotune", 1, 4, sessions.Record{Name: "tune", Wall: time.Second, Attributes: attrs(7)})
	putRecord(t, s, "autotune", 1, 5, sessions.Record{Name: "overflow", Attributes: attrs(300)})
	putRecord(t, s, "autotune", 2, 0, sessions.Record{Name: "other session", Attributes: attrs(1)})
	r := sessions.NewRecords(s)
	var got []sessions.Stamped[tune]
	for v, err := range sessions.Typed[tune](r, "autotune", sessions.InSession(1)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if len(got) != 1 || r.Skipped() != 1 {
		t.Fatalf("typed read gave %d records and skipped %d; want 1 and 1 (runs=300 overflows uint8)", len(got), r.Skipped())
	}
	want := tune{Key: "matmul/128", Winner: "tiled", Tried: []string{"naive", "tiled"}, Runs: 7, Best: 3, Cached: true, Name: "tune", Wall: time.Second, Other: sessions.Float64Value(1.5)}
	g := got[0].Record
	if g.Key != want.Key || g.Winner != want.Winner || !slices.Equal(g.Tried, want.Tried) || g.Runs != 7 || g.Best != 3 || !g.Cached || g.Name != "tune" || g.Wall != time.Second || !g.Other.Equal(want.Other) || g.Ignored != "" {
		t.Fatalf("typed record = %+v, want %+v", g, want)
	}
	if got[0].Stamp != (sessions.Stamp{Session: 1, Seq: 4}) {
		t.Fatalf("stamp = %+v", got[0].Stamp)
	}
	for _, err := range sessions.Typed[int](r, "autotune") {
		if err == nil {
			t.Fatal("Typed[int] did not fail")
		}
	}
}

func TestKindsAndInSession(t *testing.T) {
	s := sessions.NewMemStore()
	for _, k := range []string{"zeta", "alpha", "a/b", "mid"} {
		putRecord(t, s, k, 1, 0, sessions.Record{Name: k})
		putRecord(t, s, k, 2, 1, sessions.Record{Name: k + "2"})
	}
	putSession(t, s, 1)
	kinds, err := sessions.NewRecords(s).Kinds()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/b", "alpha", "mid", "zeta"}; !slices.Equal(kinds, want) {
		t.Fatalf("Kinds = %q, want %q", kinds, want)
	}
	var got []string
	for r := range sessions.NewRecords(s).All("mid", sessions.InSession(2)) {
		got = append(got, r.Record.Name)
	}
	if !slices.Equal(got, []string{"mid2"}) {
		t.Fatalf("InSession(2) = %q", got)
	}
}

func TestKeyRoundTrip(t *testing.T) {
	st := sessions.Stamp{Session: 0x0102030405060708, Seq: 42}
	k := testsupport.RecordKey("autotune", st)
	if want := "records/v1/autotune\x00\x01\x02\x03\x04\x05\x06\x07\x08\x00\x00\x00\x00\x00\x00\x00\x2a"; string(k) != want {
		t.Fatalf("RecordKey = %q, want %q", k, want)
	}
	if len(k) != keys.Size("autotune") {
		t.Fatalf("KeySize = %d, len = %d", keys.Size("autotune"), len(k))
	}
	kind, got, err := parseKey(k)
	if err != nil || kind != "autotune" || got != st {
		t.Fatalf("ParseKey = %q, %+v, %v", kind, got, err)
	}
	kind, got, err = parseKey(testsupport.SessionKey(7))
	if err != nil || kind != "sessions" || got.Session != 7 {
		t.Fatalf("ParseKey(session key) = %q, %+v, %v", kind, got, err)
	}
	for _, bad := range []string{"", "records/v1/", "records/v1/x", "records/v1/x\x00abc", "other/x\x00" + string(make([]byte, 16)), "records/v1/\x00" + string(make([]byte, 16)), "records/v1/sessions\x00abc"} {
		if _, _, err := parseKey([]byte(bad)); err == nil {
			t.Errorf("ParseKey(%q) succeeded", bad)
		}
	}
	// Byte order is stamp order.
	a := testsupport.RecordKey("k", sessions.Stamp{Session: 1, Seq: 300})
	b := testsupport.RecordKey("k", sessions.Stamp{Session: 2, Seq: 1})
	if string(a) >= string(b) {
		t.Fatal("key of (1, 300) does not sort before (2, 1)")
	}
}

func TestCheckKind(t *testing.T) {
	for in, want := range map[string]string{"autotune": "autotune", "/compile/": "compile", "a/b": "a/b"} {
		if got, err := keys.CheckKind(in); err != nil || got != want {
			t.Errorf("CheckKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := keys.CheckKind(string(make([]byte, 128))); err == nil {
		t.Error("128 zero bytes accepted")
	}
	long := string(slices.Repeat([]byte("k"), 128))
	if _, err := keys.CheckKind(long); err != nil {
		t.Errorf("a 128-byte kind refused: %v", err)
	}
}

func TestValueRoundTrip(t *testing.T) {
	vals := sessions.Attrs{
		{Key: "b", Value: sessions.BoolValue(true)},
		{Key: "i", Value: sessions.Int64Value(-1 << 40)},
		{Key: "f", Value: sessions.Float64Value(2.5)},
		{Key: "s", Value: sessions.StringValue("héllo\x00")},
		{Key: "bs", Value: sessions.SliceValue([]bool{true, false})},
		{Key: "is", Value: sessions.SliceValue([]int64{1, -2})},
		{Key: "fs", Value: sessions.SliceValue([]float64{1.5, math.Inf(1)})},
		{Key: "ss", Value: sessions.SliceValue([]string{"a", ""})},
		{Key: "nonutf8", Value: sessions.StringValue("\xff\xfe")},
	}
	in := sessions.Stamped[sessions.Record]{Stamp: sessions.Stamp{Session: 9, Seq: 1, Offset: time.Millisecond},
		Record: sessions.Record{Name: "n", Wall: time.Second, Attributes: vals,
			Status:  sessions.Status{Code: "error", Description: "boom"},
			Events:  []sessions.Event{{Name: "e", Offset: 5, Attributes: sessions.Attrs{{Key: "x", Value: sessions.Int64Value(int64(1))}}}},
			TraceID: sessions.TraceID{1}, SpanID: sessions.SpanID{2}, ParentSpanID: sessions.SpanID{3},
			Scope: sessions.Scope{Name: "sc", Version: "v1"}}}
	b, err := encodeRecord(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sessions.DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.Stamp != in.Stamp || out.Record.Name != "n" || out.Record.Wall != time.Second || out.Record.Status != in.Record.Status ||
		out.Record.TraceID != in.Record.TraceID || out.Record.SpanID != in.Record.SpanID || out.Record.ParentSpanID != in.Record.ParentSpanID ||
		out.Record.Scope != in.Record.Scope || len(out.Record.Events) != 1 || out.Record.Events[0].Offset != 5 {
		t.Fatalf("round trip = %+v", out)
	}
	for _, kv := range vals {
		got, ok := out.Record.Attributes.Get(kv.Key)
		if !ok || !got.Equal(kv.Value) || got.Kind() != kv.Value.Kind() {
			t.Errorf("attribute %s = %v (%s), want %v (%s)", kv.Key, got, got.Kind(), kv.Value, kv.Value.Kind())
		}
	}
	again, _ := encodeRecord(out)
	if string(again) != string(b) {
		t.Error("encoding is not deterministic across a round trip")
	}
}

func TestParseLevel(t *testing.T) {
	for _, l := range []sessions.Level{sessions.LevelOff, sessions.LevelBasic, sessions.LevelFull} {
		got, err := sessions.ParseLevel(l.String())
		if err != nil || got != l {
			t.Errorf("ParseLevel(%q) = %v, %v", l, got, err)
		}
	}
	if _, err := sessions.ParseLevel("verbose"); err == nil {
		t.Error("ParseLevel(verbose) succeeded")
	}
}

func TestValueJSON(t *testing.T) {
	for _, c := range []struct {
		v    sessions.Value
		want string
	}{
		{sessions.Float64Value(2), "2.0"},
		{sessions.Float64Value(2.5), "2.5"},
		{sessions.Float64Value(1e300), "1e+300"},
		{sessions.Float64Value(math.NaN()), `"NaN"`},
		{sessions.Int64Value(2), "2"},
		{sessions.SliceValue([]float64{1, math.Inf(-1)}), `[1.0,"-Inf"]`},
		{sessions.SliceValue([]string{"a"}), `["a"]`},
	} {
		b, err := c.v.MarshalJSON()
		if err != nil || string(b) != c.want {
			t.Errorf("MarshalJSON(%v) = %s, %v; want %s", c.v, b, err, c.want)
		}
	}
}

func TestDamagedIDIsUndecodable(t *testing.T) {
	s := sessions.NewMemStore()
	// {"stamp": {}, "record": {"name": "x", "span_id": h'0102'}}: a 2-byte span id.
	put(t, s, testsupport.RecordKey("k", sessions.Stamp{Session: 1}), []byte("\xa2\x65stamp\xa0\x66record\xa2\x64name\x61x\x67span_id\x42\x01\x02"))
	r := sessions.NewRecords(s)
	for range r.All("k") {
		t.Fatal("a record with a 2-byte span id decoded")
	}
	if r.Skipped() != 1 {
		t.Fatalf("Skipped = %d, want 1", r.Skipped())
	}
}

func TestInStampOrderMergesKinds(t *testing.T) {
	s := sessions.NewMemStore()
	// Stamps interleave across kinds and sessions; each kind reads in order.
	for _, r := range []struct {
		kind    string
		session sessions.SessionID
		seq     uint64
	}{{"b", 1, 0}, {"a", 1, 1}, {"marks", 1, 2}, {"a", 1, 3}, {"b", 2, 0}, {"a", 2, 1}} {
		putRecord(t, s, r.kind, r.session, r.seq, sessions.Record{Name: fmt.Sprintf("%s%d%d", r.kind, r.session, r.seq)})
	}
	var got []string
	for kr, err := range sessions.NewRecords(s).InStampOrder(nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, kr.Kind+":"+kr.Record.Name)
	}
	want := []string{"b:b10", "a:a11", "marks:marks12", "a:a13", "b:b20", "a:a21"}
	if !slices.Equal(got, want) {
		t.Fatalf("InStampOrder = %q, want %q", got, want)
	}
	got = got[:0]
	for kr := range sessions.NewRecords(s).InStampOrder([]string{"a", "b"}, sessions.InSession(2)) {
		got = append(got, kr.Record.Name)
	}
	if !slices.Equal(got, []string{"b20", "a21"}) {
		t.Fatalf("InStampOrder(a, b; session 2) = %q", got)
	}
}

func encodeRecord(v sessions.Stamped[sessions.Record]) ([]byte, error) { return v.MarshalCBOR() }

func encodeSession(s sessions.Session) ([]byte, error) { return s.MarshalCBOR() }

// parseKey splits a key into its kind and stamp, as keys.Parse does.
func parseKey(k []byte) (string, sessions.Stamp, error) {
	kind, session, seq, err := keys.Parse(k)
	return kind, sessions.Stamp{Session: sessions.SessionID(session), Seq: seq}, err
}

func names(t *testing.T, s sessions.Store, kind string) []string {
	return testsupport.Names(t, s, kind)
}

// TestKeysAreTheTruth stores values that disagree with their keys: a
// record whose stamp names another session or seq, a session row whose id
// is another's, and values that carry no stamp or id at all. Every read
// takes the key's word: a value that names something else is skipped and
// counted, one that names nothing reads where its key puts it.
func TestKeysAreTheTruth(t *testing.T) {
	s := sessions.NewMemStore()
	enc := func(st sessions.Stamp, name string) []byte {
		v, err := encodeRecord(sessions.Stamped[sessions.Record]{Stamp: st, Record: sessions.Record{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	row := func(id sessions.SessionID, label string) []byte {
		v, err := encodeSession(sessions.Session{ID: id, Label: label})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	at := func(session sessions.SessionID, seq uint64) []byte {
		return testsupport.RecordKey("k", sessions.Stamp{Session: session, Seq: seq})
	}
	put(t, s, at(1, 0), enc(sessions.Stamp{Session: 1, Seq: 0}, "good"))
	put(t, s, at(1, 1), enc(sessions.Stamp{Session: 2, Seq: 1}, "names session 2"))
	put(t, s, at(1, 2), enc(sessions.Stamp{Session: 1, Seq: 7}, "names seq 7"))
	put(t, s, at(1, 3), enc(sessions.Stamp{Offset: time.Second}, "no stamp"))
	put(t, s, at(2, 0), enc(sessions.Stamp{Session: 2, Seq: 0}, "good2"))
	put(t, s, testsupport.SessionKey(1), row(0, "no id"))
	put(t, s, testsupport.SessionKey(2), row(3, "names session 3"))
	put(t, s, testsupport.SessionKey(4), row(4, "good"))

	r := sessions.NewRecords(s)
	var got []string
	for rec, err := range r.All("k") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d/%d %s", rec.Stamp.Session, rec.Stamp.Seq, rec.Record.Name))
	}
	want := []string{"1/0 good", "1/3 no stamp", "2/0 good2"}
	if !slices.Equal(got, want) || r.Skipped() != 2 {
		t.Fatalf("All = %q, skipped %d; want %q, 2 skipped", got, r.Skipped(), want)
	}

	r = sessions.NewRecords(s)
	got = got[:0]
	for kr, err := range r.InStampOrder(nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d/%d %s", kr.Stamp.Session, kr.Stamp.Seq, kr.Record.Name))
	}
	if !slices.Equal(got, want) || r.Skipped() != 2 {
		t.Fatalf("InStampOrder = %q, skipped %d; want %q, 2 skipped", got, r.Skipped(), want)
	}

	r = sessions.NewRecords(s)
	got = got[:0]
	for rec, err := range sessions.Typed[struct {
		Name string `record:",name"`
	}](r, "k", sessions.InSession(1)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d/%d %s", rec.Stamp.Session, rec.Stamp.Seq, rec.Record.Name))
	}
	if !slices.Equal(got, want[:2]) || r.Skipped() != 2 {
		t.Fatalf("Typed(session 1) = %q, skipped %d; want %q, 2 skipped", got, r.Skipped(), want[:2])
	}

	r = sessions.NewRecords(s)
	got = got[:0]
	for row, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s", row.ID, row.Label))
	}
	if want := []string{"1 no id", "4 good"}; !slices.Equal(got, want) || r.Skipped() != 1 {
		t.Fatalf("Sessions = %q, skipped %d; want %q, 1 skipped", got, r.Skipped(), want)
	}
	// The row listed under id 1 is the row --session 1 finds.
	if row, ok, err := r.Session(1); err != nil || !ok || row.Label != "no id" {
		t.Fatalf("Session(1) = %+v, %v, %v", row, ok, err)
	}
	// Prune goes by keys, and says so: three rows, whatever their values.
	if pruned, kept, err := r.PrunePlan(1); err != nil || !slices.Equal(pruned, []sessions.SessionID{1, 2}) || kept != 1 {
		t.Fatalf("PrunePlan(1) = %v, %d, %v; want [1 2], 1", pruned, kept, err)
	}
}

// Newest is the session that started last, read from the rows' keys; a
// row that does not decode is passed over for the one before it.
func TestNewest(t *testing.T) {
	s := sessions.NewMemStore()
	r := sessions.NewRecords(s)
	if _, ok, err := r.Newest(); ok || err != nil {
		t.Fatalf("Newest of an empty store: %v, %v", ok, err)
	}
	putSession(t, s, 3)
	putSession(t, s, 7)
	putSession(t, s, 5)
	if got, ok, err := r.Newest(); !ok || err != nil || got.ID != 7 {
		t.Fatalf("Newest = %v, %v, %v; want session 7", got.ID, ok, err)
	}
	put(t, s, testsupport.SessionKey(9), []byte("not cbor"))
	if got, ok, err := r.Newest(); !ok || err != nil || got.ID != 7 {
		t.Fatalf("Newest past an undecodable row = %v, %v, %v; want session 7", got.ID, ok, err)
	}
}

// Record reads one record again by its stamp, and says when the store has
// none there.
func TestRecordByStamp(t *testing.T) {
	s := sessions.NewMemStore()
	for seq := range uint64(3) {
		putRecord(t, s, "compile", 1, seq, sessions.Record{Name: fmt.Sprint("c", seq)})
	}
	putRecord(t, s, "compile", 2, 1, sessions.Record{Name: "other session"})
	putRecord(t, s, "tune", 1, 1, sessions.Record{Name: "other kind"})
	r := sessions.NewRecords(s)
	if rec, ok, err := r.Record("compile", 1, 1); !ok || err != nil || rec.Record.Name != "c1" || rec.Stamp.Seq != 1 {
		t.Errorf("Record(compile, 1, 1) = %+v, %v, %v", rec, ok, err)
	}
	for _, c := range []struct {
		kind string
		id   sessions.SessionID
		seq  uint64
	}{{"compile", 1, 3}, {"compile", 3, 1}, {"nope", 1, 1}} {
		if rec, ok, err := r.Record(c.kind, c.id, c.seq); ok || err != nil {
			t.Errorf("Record(%s, %d, %d) = %+v, %v, %v; want none", c.kind, c.id, c.seq, rec, ok, err)
		}
	}
	if _, _, err := r.Record("", 1, 1); err == nil {
		t.Error("Record of an invalid kind: no error")
	}
}
