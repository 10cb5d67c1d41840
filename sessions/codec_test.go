package sessions_test

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/otelrecords/otelrecords/sessions"
)

// fullRecord sets every field a record body has.
func fullRecord() sessions.Stamped[sessions.Record] {
	return sessions.Stamped[sessions.Record]{
		Stamp: sessions.Stamp{Session: 1735787045006000000, Seq: 7, Offset: 3 * time.Millisecond},
		Record: sessions.Record{
			Name: "tune matmul",
			Wall: 5 * time.Millisecond,
			Attributes: sessions.Attrs{
				{Key: "autotune.key", Value: sessions.StringValue("matmul 1024")},
				{Key: "candidates", Value: sessions.SliceValue([]string{"tiled", "simd"})},
				{Key: "winner", Value: sessions.StringValue("tiled")},
			},
			Status:       sessions.Status{Code: "error", Description: "simd failed"},
			Events:       []sessions.Event{{Name: "candidate", Offset: 1, Attributes: sessions.Attrs{{Key: "n", Value: sessions.Int64Value(int64(1))}}}},
			TraceID:      sessions.TraceID{0: 0x4b, 15: 0xf9},
			SpanID:       sessions.SpanID{0: 1, 7: 2},
			ParentSpanID: sessions.SpanID{0: 1, 7: 1},
			Scope:        sessions.Scope{Name: "example.com/tuner", Version: "v0.1.0"},
			SpanKind:     "server",
			TraceState:   "vendor=a,other=b",
			Links: []sessions.Link{
				{TraceID: sessions.TraceID{0: 9, 15: 9}, SpanID: sessions.SpanID{7: 9}, TraceState: "l=1",
					Attributes: sessions.Attrs{{Key: "why", Value: sessions.StringValue("batch")}}},
				{TraceID: sessions.TraceID{0: 8, 15: 8}, SpanID: sessions.SpanID{7: 8}},
			},
			DroppedAttributes: 2,
			DroppedEvents:     3,
			DroppedLinks:      4,
			Effect:            sessions.Changed,
			Inputs:            []string{"autotune.key", "candidates"},
		},
	}
}

// TestWireMatchesLibrary checks the one-pass wire struct against the
// library decoding and encoding Record through its own fields: the same
// record encodes to the same bytes both ways, and those bytes decode to
// the same record both ways.
func TestWireMatchesLibrary(t *testing.T) {
	for name, v := range map[string]sessions.Stamped[sessions.Record]{
		"every field": fullRecord(),
		"a mark":      {Record: sessions.Record{Name: "load weights", Wall: time.Second}},
		"observed, empty sets": {Record: sessions.Record{
			Name: "x", Attributes: sessions.Attrs{}, Events: []sessions.Event{}, Links: []sessions.Link{{}}, Inputs: []string{},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			wire, err := encodeRecord(v)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := sessions.EncodeRecordPlain(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(wire, plain) {
				t.Fatalf("wire and library encode differently:\n%x\n%x", wire, plain)
			}
			a, errA := sessions.DecodeRecord(wire)
			b, errB := sessions.DecodeRecordPlain(wire)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("wire and library decode differently:\n%#v %v\n%#v %v", a, errA, b, errB)
			}
		})
	}
	if v := fullRecord(); !reflect.DeepEqual(mustDecode(t, mustEncode(t, v)), v) {
		t.Errorf("a record with every field does not round-trip:\n%#v\n%#v", mustDecode(t, mustEncode(t, v)), v)
	}
}

// v1Body is the record body as the first v1 writers and readers knew it,
// before span kind, trace state, links, dropped counts, effect and inputs.
type v1Body struct {
	Name         string           `cbor:"name"`
	Wall         time.Duration    `cbor:"wall_ns"`
	Attributes   sessions.Attrs   `cbor:"attrs,omitzero"`
	Status       sessions.Status  `cbor:"status,omitzero"`
	Events       []sessions.Event `cbor:"events,omitempty"`
	TraceID      sessions.TraceID `cbor:"trace_id,omitzero"`
	SpanID       sessions.SpanID  `cbor:"span_id,omitzero"`
	ParentSpanID sessions.SpanID  `cbor:"parent_span_id,omitzero"`
	Scope        sessions.Scope   `cbor:"scope,omitzero"`
}

type v1Stamped struct {
	Stamp  sessions.Stamp `cbor:"stamp"`
	Record v1Body         `cbor:"record"`
}

// v1Mark is a mark as the first v1 writers stored it (docs/FORMAT.md,
// 3.2's example).
const v1Mark = "a2" + "657374616d70" + "a3" + "63736571" + "00" + "6773657373696f6e" + "1b1816c11eef4ebf80" +
	"696f66667365745f6e73" + "00" + "667265636f7264" + "a2" + "646e616d65" + "6c6c6f61642077656967687473" +
	"6777616c6c5f6e73" + "1a00989680"

// TestOldAndNewRecords checks that the new fields are additive both ways:
// a record written before them decodes as it did, with the new fields
// empty (effect observed, no inputs); a record with every new field
// decodes with a v1 reader's struct, which ignores the keys it does not
// know, to the fields that reader knows.
func TestOldAndNewRecords(t *testing.T) {
	v := fullRecord()
	old := v1Stamped{Stamp: v.Stamp, Record: v1Body{
		Name: v.Record.Name, Wall: v.Record.Wall, Attributes: v.Record.Attributes, Status: v.Record.Status,
		Events: v.Record.Events, TraceID: v.Record.TraceID, SpanID: v.Record.SpanID,
		ParentSpanID: v.Record.ParentSpanID, Scope: v.Record.Scope,
	}}

	// Old record, new reader.
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := em.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	got := mustDecode(t, b)
	want := v
	want.Record.SpanKind, want.Record.TraceState, want.Record.Links = "", "", nil
	want.Record.DroppedAttributes, want.Record.DroppedEvents, want.Record.DroppedLinks = 0, 0, 0
	want.Record.Effect, want.Record.Inputs = sessions.Observed, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("an old record decodes as\n%#v\nwant\n%#v", got, want)
	}
	// and encodes to the bytes it was stored as, so old and new writers
	// agree on what they both know.
	if again := mustEncode(t, got); !bytes.Equal(again, b) {
		t.Errorf("an old record encodes again as\n%x\nwas\n%x", again, b)
	}

	// New record, old reader: the decode modes a v1 reader used, which
	// leave unknown keys alone (fxamacker's default ExtraReturnErrorsNone).
	dm, err := cbor.DecOptions{DupMapKey: cbor.DupMapKeyEnforcedAPF, MaxNestedLevels: 16}.DecMode()
	if err != nil {
		t.Fatal(err)
	}
	var read v1Stamped
	if err := dm.Unmarshal(mustEncode(t, v), &read); err != nil {
		t.Fatalf("a v1 reader cannot read a new record: %v", err)
	}
	if !reflect.DeepEqual(read, old) {
		t.Errorf("a v1 reader reads a new record as\n%#v\nwant\n%#v", read, old)
	}

	// The first v1 writer's mark, byte for byte.
	mark, err := hex.DecodeString(v1Mark)
	if err != nil {
		t.Fatal(err)
	}
	if len(mark) != 80 {
		t.Fatalf("the v1 mark is %d bytes, want 80", len(mark))
	}
	if m := mustDecode(t, mark); m.Stamp.Session != 1735787045006000000 || m.Record.Name != "load weights" || m.Record.Wall != 10*time.Millisecond ||
		m.Record.Effect != sessions.Observed || m.Record.Inputs != nil || m.Record.SpanKind != "" {
		t.Errorf("the v1 mark decodes as %#v", m)
	}
	if again := mustEncode(t, mustDecode(t, mark)); !bytes.Equal(again, mark) {
		t.Errorf("the v1 mark encodes again as %x", again)
	}

	// Unknown keys, at every level a reader may meet them, are ignored.
	type future struct {
		Stamp  sessions.Stamp `cbor:"stamp"`
		Record struct {
			Name  string            `cbor:"name"`
			Links []map[string]any  `cbor:"links"`
			Later map[string]string `cbor:"later_field"`
		} `cbor:"record"`
		Top int `cbor:"top_level_later"`
	}
	var f future
	f.Record.Name = "from a later writer"
	f.Record.Links = []map[string]any{{"span_id": []byte{7: 1}, "flags": uint64(1)}}
	f.Record.Later = map[string]string{"a": "b"}
	f.Top = 1
	fb, err := cbor.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if r := mustDecode(t, fb); r.Record.Name != f.Record.Name || len(r.Record.Links) != 1 || r.Record.Links[0].SpanID != (sessions.SpanID{7: 1}) {
		t.Errorf("a record with unknown keys decodes as %#v", r)
	}
}

// TestEffectText checks the effect's stored text: "changed" is Changed,
// observed is left out, any other text reads as Observed, as a span's
// records.effect attribute is read; a non-text effect is undecodable.
func TestEffectText(t *testing.T) {
	for text, want := range map[string]sessions.Effect{"changed": sessions.Changed, "observed": sessions.Observed, "later": sessions.Observed, "": sessions.Observed} {
		b, err := cbor.Marshal(map[string]any{"stamp": map[string]any{}, "record": map[string]any{"name": "x", "effect": text}})
		if err != nil {
			t.Fatal(err)
		}
		if got := mustDecode(t, b).Record.Effect; got != want {
			t.Errorf("effect %q reads as %v, want %v", text, got, want)
		}
		if got, err := sessions.DecodeRecordPlain(b); err != nil || got.Record.Effect != want {
			t.Errorf("effect %q reads through the library as %v, %v; want %v", text, got.Record.Effect, err, want)
		}
	}
	b, _ := cbor.Marshal(map[string]any{"stamp": map[string]any{}, "record": map[string]any{"name": "x", "effect": 1}})
	if _, err := sessions.DecodeRecord(b); err == nil {
		t.Error("an effect that is an integer decodes")
	}
	if !bytes.Contains(mustEncode(t, fullRecord()), []byte("\x66effect\x67changed")) {
		t.Error(`a changed record does not store "effect": "changed"`)
	}
	observed := fullRecord()
	observed.Record.Effect = sessions.Observed
	if bytes.Contains(mustEncode(t, observed), []byte("effect")) {
		t.Error("an observed record stores its effect")
	}
}

func TestIsInput(t *testing.T) {
	r := fullRecord().Record
	if !r.IsInput("autotune.key") || !r.IsInput("candidates") || r.IsInput("winner") || r.IsInput("absent") {
		t.Errorf("IsInput wrong for inputs %q", r.Inputs)
	}
}

func mustEncode(t *testing.T, v sessions.Stamped[sessions.Record]) []byte {
	t.Helper()
	b, err := encodeRecord(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecode(t *testing.T, b []byte) sessions.Stamped[sessions.Record] {
	t.Helper()
	v, err := sessions.DecodeRecord(b)
	if err != nil {
		t.Fatalf("%v\n%x", err, b)
	}
	return v
}
