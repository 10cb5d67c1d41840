package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
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
