package sessions

import (
	"errors"
	"testing"
	"time"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/ground/owned"
)

// DecodeEntry reads back what a writer writes, rows and records, and
// tells other keys and damaged values apart.
func TestDecodeEntry(t *testing.T) {
	row := Session{ID: 42, StartedUnixMs: 1, Label: "build"}
	rv, err := row.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	kind, _, got, err := DecodeEntry(Entry{Key: keys.Session(42), Value: rv})
	if err != nil || kind != keys.SessionsKind || got.ID != 42 || got.Label != "build" {
		t.Fatalf("row: %q %+v %v", kind, got, err)
	}
	st := Stamped[Record]{Stamp: Stamp{Session: 42, Seq: 7, Offset: time.Second}, Record: Record{Name: "compile", Wall: time.Millisecond}}
	v, err := st.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	kind, rec, _, err := DecodeEntry(Entry{Key: keys.Record("artifact", 42, 7), Value: v})
	if err != nil || kind != "artifact" || rec.Stamp != st.Stamp || rec.Record.Name != "compile" {
		t.Fatalf("record: %q %+v %v", kind, rec, err)
	}
	if _, _, _, err := DecodeEntry(Entry{Key: keys.Record("artifact", 42, 8), Value: v}); err == nil {
		t.Error("a record whose stamp is not its key's decoded")
	}
	if _, _, _, err := DecodeEntry(Entry{Key: keys.ImportSender(42), Value: []byte{1}}); !errors.Is(err, ErrNotRecord) {
		t.Errorf("an importer's entry: %v, want ErrNotRecord", err)
	}
	if _, _, _, err := DecodeEntry(Entry{Key: keys.Record("artifact", 42, 7), Value: []byte{0xff, 0x00}}); err == nil || errors.Is(err, ErrNotRecord) {
		t.Errorf("a damaged value: %v, want a decode error", err)
	}
}

// The owned decoder (owned.DecodeEntry, the records processor's) answers
// as DecodeEntry does for every entry, records of every shape, rows, other
// keys and damaged values alike; only what it checks first differs.
func TestDecodeOwnEntryIsDecodeEntry(t *testing.T) {
	full := Stamped[Record]{Stamp: Stamp{Session: 42, Seq: 9, Offset: -time.Second}, Record: Record{
		Name: "compile", Wall: time.Millisecond, Effect: Changed, Inputs: []string{"src"},
		Attributes: Attrs{{"n", Int64Value(3)}, {"src", StringValue("a.c")}, {"xs", SliceValue([]float64{0.5})}},
		Events:     []Event{{Name: "retry", Offset: time.Microsecond, Attributes: Attrs{{"why", StringValue("busy")}}}},
		Links:      []Link{{TraceID: TraceID{1}, SpanID: SpanID{2}, TraceState: "a=b"}},
		Status:     Status{Code: "error", Description: "no"}, TraceID: TraceID{9, 15: 1}, SpanID: SpanID{7: 4},
		ParentSpanID: SpanID{7: 3}, Scope: Scope{Name: "build", Version: "1"}, SpanKind: "client",
		DroppedAttributes: 1, DroppedEvents: 2, DroppedLinks: 3,
	}}
	fv, err := full.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	row, err := (Session{ID: 42, Label: "build"}).MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	big := Stamped[Record]{Stamp: Stamp{Session: 42, Seq: 10}, Record: Record{Name: "big", Attributes: Attrs{{"v", StringValue(string(make([]byte, shareUpTo)))}}}}
	bv, err := big.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	// Events of many empty attributes: cheap to write, past what a
	// reader's budget allows for their bytes (an Importer writes such a
	// record from one span).
	var empties Attrs
	for c := byte('!'); c < 0x7f; c++ {
		empties = append(empties, Attr{string([]byte{c}), SliceValue[string](nil)})
	}
	costly := Stamped[Record]{Stamp: Stamp{Session: 42, Seq: 11}, Record: Record{Name: "costly"}}
	for range 40 {
		costly.Record.Events = append(costly.Record.Events, Event{Attributes: empties})
	}
	cv, err := costly.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := DecodeEntry(Entry{Key: keys.Record("artifact", 42, 11), Value: cv}); !errors.Is(err, cw.ErrOverBudget) {
		t.Fatalf("the costly record: %v, want it past the budget", err)
	}
	entries := map[string]Entry{
		"past the budget":       {Key: keys.Record("artifact", 42, 11), Value: cv},
		"every field":           {Key: keys.Record("artifact", 42, 9), Value: fv},
		"a shared-up value":     {Key: keys.Record("artifact", 42, 10), Value: bv},
		"a row":                 {Key: keys.Session(42), Value: row},
		"another key":           {Key: keys.ImportSender(42), Value: []byte{1}},
		"a stamp not its key's": {Key: keys.Record("artifact", 42, 8), Value: fv},
		"a damaged value":       {Key: keys.Record("artifact", 42, 9), Value: []byte{0xff, 0x00}},
		"trailing bytes":        {Key: keys.Record("artifact", 42, 9), Value: append(append([]byte{}, fv...), 0)},
	}
	// And given one record after another into the same rec, its
	// attributes' array reused.
	srec := full
	srec.Record.Attributes = append(make(Attrs, 0, 8), full.Record.Attributes...)
	for name, e := range entries {
		kind, rec, r, err := DecodeEntry(e)
		var orec Stamped[Record]
		var orow, srow Session
		okind, oerr := owned.DecodeEntry(e.Key, e.Value, &orec, &orow)
		skind, serr := owned.DecodeEntry(e.Key, e.Value, &srec, &srow)
		if skind != kind || (serr == nil) != (err == nil) {
			t.Errorf("%s: reusing says %q %v, DecodeEntry %q %v", name, skind, serr, kind, err)
		} else if err == nil {
			want, _ := rec.MarshalCBOR()
			got, _ := srec.MarshalCBOR()
			if (kind != keys.SessionsKind && string(want) != string(got)) || r.ID != srow.ID || r.Label != srow.Label {
				t.Errorf("%s: reusing decodes differ:\n%+v\n%+v", name, srec, rec)
			}
		}
		if kind != okind || (err == nil) != (oerr == nil) || errors.Is(err, ErrNotRecord) != errors.Is(oerr, ErrNotRecord) {
			t.Errorf("%s: owned says %q %v, DecodeEntry %q %v", name, okind, oerr, kind, err)
			continue
		}
		if err != nil {
			continue
		}
		if r.ID != orow.ID || r.Label != orow.Label {
			t.Errorf("%s: rows differ: %+v, %+v", name, orow, r)
		}
		want, _ := rec.MarshalCBOR()
		got, _ := orec.MarshalCBOR()
		if string(want) != string(got) {
			t.Errorf("%s: records differ:\n%+v\n%+v", name, orec, rec)
		}
	}
	if ok := decodeOwn(fv, false, new(Stamped[Record])); !ok {
		t.Error("a value of our own encoder was not read in the one pass")
	}
}
