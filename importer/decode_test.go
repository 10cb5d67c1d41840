package importer_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
)

// capturing is a store that keeps a copy of every entry written to it:
// what an Importer hands a store given with WithStore.
type capturing struct {
	sessions.Store
	entries []sessions.Entry
}

func (c *capturing) Write(es []sessions.Entry) error {
	for _, e := range es {
		c.entries = append(c.entries, sessions.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
	}
	return c.Store.Write(es)
}

// importer.DecodeEntry answers as sessions.DecodeEntry does for every
// entry an Importer writes: rows, records plain and not, a record too
// large to share its strings, and the Importer's own bookkeeping.
func TestDecodeEntryIsSessionsDecodeEntry(t *testing.T) {
	st := &capturing{Store: sessions.NewMemStore()}
	im, err := importer.New("", importer.Config{}, importer.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tid := trace.TraceID{1, 15: 1}
	span := func(id byte, name string, attrs ...attribute.KeyValue) importer.Span {
		s := importer.Span{TraceID: tid, SpanID: trace.SpanID{7: id}, Name: name,
			Start: now.Add(-time.Second), End: now, Attributes: attrs}
		if id > 1 {
			s.ParentSpanID = trace.SpanID{7: 1}
		}
		return s
	}
	plain := span(2, "plain", attribute.String("records.kind", "artifact"), attribute.Int("n", 3))
	events := span(3, "events", attribute.String("records.kind", "artifact"))
	events.Events = []sdktrace.Event{{Name: "retry", Time: now, Attributes: []attribute.KeyValue{attribute.Bool("again", true)}}}
	events.Status = sdktrace.Status{Code: codes.Error, Description: "no"}
	big := span(4, "big", attribute.String("records.kind", "artifact"), attribute.String("log", strings.Repeat("x", 20<<10)))
	root := span(1, "build", attribute.String("records.kind", "step"), attribute.String("records.effect", "changed"))
	res := []attribute.KeyValue{attribute.String("service.name", "decode"), attribute.Int("process.pid", 7)}
	if _, err := im.Import(context.Background(), importer.Batch{Resource: res, Spans: []importer.Span{plain, events, big, root}}); err != nil {
		t.Fatal(err)
	}
	if err := im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var records, rows int
	var rec sessions.Stamped[sessions.Record]
	var row sessions.Session
	for _, e := range st.entries {
		kind, wantRec, wantRow, wantErr := sessions.DecodeEntry(e)
		gotKind, gotErr := importer.DecodeEntry(e, &rec, &row)
		if kind != gotKind || (wantErr == nil) != (gotErr == nil) || errors.Is(wantErr, sessions.ErrNotRecord) != errors.Is(gotErr, sessions.ErrNotRecord) {
			t.Errorf("%q: DecodeEntry says %q %v, sessions.DecodeEntry %q %v", e.Key, gotKind, gotErr, kind, wantErr)
			continue
		}
		switch {
		case wantErr != nil:
		case kind == "sessions":
			rows++
			w, _ := wantRow.MarshalCBOR()
			g, _ := row.MarshalCBOR()
			if !bytes.Equal(w, g) {
				t.Errorf("row %q: %+v, want %+v", e.Key, row, wantRow)
			}
		default:
			records++
			w, _ := wantRec.MarshalCBOR()
			g, _ := rec.MarshalCBOR()
			if !bytes.Equal(w, g) {
				t.Errorf("record %q: %+v, want %+v", e.Key, rec, wantRec)
			}
		}
	}
	if records != 4 || rows == 0 {
		t.Errorf("%d records and %d rows written, want 4 and a row", records, rows)
	}
	// A caller decoding one record after another allocates their
	// attributes' array once: the next record's go in it.
	var first *sessions.Attr
	for _, e := range st.entries {
		if _, err := importer.DecodeEntry(e, &rec, &row); err != nil || rec.Record.Name != "plain" {
			continue
		}
		for range 2 {
			if first != nil && &rec.Record.Attributes[0] != first {
				t.Errorf("record %q: its attributes in a new array, want those of the last", e.Key)
			}
			first = &rec.Record.Attributes[0]
			if _, err := importer.DecodeEntry(e, &rec, &row); err != nil {
				t.Fatal(err)
			}
		}
	}
	if first == nil {
		t.Error("the plain record was not written")
	}
}
