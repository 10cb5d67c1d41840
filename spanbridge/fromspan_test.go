package spanbridge_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Records that no span of the Go SDK makes, or that a store of another
// writer holds, come back from their spans as they were: FromSpan undoes
// everything Span fills in for them.
func TestFromSpanGivesBackWhatSpanFilledIn(t *testing.T) {
	id := sessions.SessionID(sessionStart.UnixNano())
	cases := []struct {
		name string
		kind string
		rec  sessions.Stamped[sessions.Record]
	}{
		{"no ids, no span kind (a Recorder driven directly)", "autotune", sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: 7, Offset: 3*time.Second + 1},
			Record: sessions.Record{Name: "tune", Wall: 5, Attributes: sessions.Attrs{{Key: "k", Value: sessions.StringValue("v")}}},
		}},
		{"a trace id and no span id", "compile", sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: 0},
			Record: sessions.Record{Name: "c", TraceID: sessions.TraceID{1, 15: 2}, SpanKind: "server"},
		}},
		{"inputs known, none of them (empty, not nil)", "compile", sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: 1},
			Record: sessions.Record{Name: "c", TraceID: sessions.TraceID{1}, SpanID: sessions.SpanID{2}, SpanKind: "internal", Inputs: []string{}, Attributes: sessions.Attrs{{Key: "out", Value: sessions.Int64Value(int64(1))}}},
		}},
		{"inputs and outcome, changed", "autotune", sessions.Stamped[sessions.Record]{
			Stamp: sessions.Stamp{Session: id, Seq: 2, Offset: time.Hour},
			Record: sessions.Record{
				Name: "tune", TraceID: sessions.TraceID{1}, SpanID: sessions.SpanID{3}, ParentSpanID: sessions.SpanID{2}, SpanKind: "client",
				Attributes: sessions.Attrs{
					{Key: "autotune.key", Value: sessions.StringValue("matmul")},
					{Key: "candidates", Value: sessions.SliceValue([]string{"a", "b"})},
					{Key: "winner", Value: sessions.StringValue("a")},
				},
				Inputs: []string{"autotune.key", "candidates"},
				Effect: sessions.Changed,
				Status: sessions.Status{Code: spanbridge.StatusError, Description: "b failed"},
				Events: []sessions.Event{{Name: "tried", Offset: 4, Attributes: sessions.Attrs{{Key: "c", Value: sessions.StringValue("b")}}}},
			},
		}},
		{"a span kind OpenTelemetry does not name", "marks", sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: math.MaxUint64},
			Record: sessions.Record{Name: "m", TraceID: sessions.TraceID{1}, SpanID: sessions.SpanID{4}, SpanKind: "unspecified"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			span := spanbridge.Span(spanbridge.Resource(sessions.Session{ID: id}), c.kind, c.rec)
			kind, got, err := spanbridge.FromSpan(id, span)
			if err != nil || kind != c.kind || !reflect.DeepEqual(got, c.rec) {
				t.Errorf("FromSpan gave %s %+v (%v)\nwant %s %+v", kind, got, err, c.kind, c.rec)
			}
		})
	}
}

// A span that is not a record (no kind or seq: a program's own span, or
// one with a kind no store holds) is said to be none.
func TestFromSpanRefusesSpansThatAreNoRecords(t *testing.T) {
	for name, attrs := range map[string][]attribute.KeyValue{
		"nothing":        nil,
		"no seq":         {spanbridge.Kind("compile")},
		"no kind":        {spanbridge.SeqKey.Int(3)},
		"a seq string":   {spanbridge.Kind("compile"), spanbridge.SeqKey.String("3")},
		"kind sessions":  {spanbridge.Kind("sessions"), spanbridge.SeqKey.Int(3)},
		"kind with 0x00": {spanbridge.Kind("a\x00b"), spanbridge.SeqKey.Int(3)},
	} {
		span := tracetest.SpanStub{Name: name, Attributes: attrs}.Snapshot()
		if _, _, err := spanbridge.FromSpan(1, span); !errors.Is(err, spanbridge.ErrNotRecord) {
			t.Errorf("%s: FromSpan error %v, want ErrNotRecord", name, err)
		}
	}
}

// A session row comes back from its Resource as the store held it, even
// where the Resource shows something else: the process's own Resource
// saying another pid, os or arch than the row, a label attribute the
// session's label overrode, an empty label beside one, a resource in an
// order the Resource does not keep.
func TestFromResourceGivesBackTheRow(t *testing.T) {
	rows := map[string]sessions.Session{
		"plain": {ID: 1735787045006000000, StartedUnixMs: 1735787045006, Version: "v0.3.1", Label: "models build", Process: 4242, OS: "linux", Arch: "amd64",
			Resource: sessions.Attrs{{Key: "service.name", Value: sessions.StringValue("builder")}}},
		"nothing but the id": {ID: 5},
		"the process says otherwise": {ID: 6, StartedUnixMs: -3, Process: 1, OS: "plan9", Arch: "386", Resource: sessions.Attrs{
			{Key: "zeta", Value: sessions.SliceValue([]float64{0.5, math.Inf(1)})},
			{Key: "process.pid", Value: sessions.Int64Value(int64(99))},
			{Key: "os.type", Value: sessions.StringValue("linux")},
			{Key: "host.arch", Value: sessions.StringValue("arm64")},
			{Key: "alpha", Value: sessions.SliceValue([]bool{true})},
			{Key: "count", Value: sessions.Int64Value(math.MinInt64)},
		}},
		"a label the session overrode": {ID: 7, Label: "run 2", Version: "v1", Resource: sessions.Attrs{
			{Key: string(spanbridge.SessionLabelKey), Value: sessions.StringValue("run 1")},
			{Key: string(spanbridge.SessionVersionKey), Value: sessions.StringValue("v0")},
			{Key: string(spanbridge.SessionIDKey), Value: sessions.StringValue("not the id")},
			{Key: string(spanbridge.SessionStartedKey), Value: sessions.StringValue("not a time")},
		}},
		"an empty label beside one": {ID: 8, Resource: sessions.Attrs{
			{Key: string(spanbridge.SessionLabelKey), Value: sessions.StringValue("from the resource")},
			{Key: string(spanbridge.SessionVersionKey), Value: sessions.StringValue("v0")},
		}},
	}
	for name, row := range rows {
		t.Run(name, func(t *testing.T) {
			got, isRow, err := spanbridge.FromResource(spanbridge.Resource(row).Attributes())
			if err != nil || !isRow || !reflect.DeepEqual(got, row) {
				t.Errorf("FromResource gave %+v (row %t, %v)\nwant %+v", got, isRow, err, row)
			}
		})
	}

	// Records whose row is gone come back without one.
	orphan := spanbridge.OrphanResource(sessions.Session{ID: 9})
	if got, isRow, err := spanbridge.FromResource(orphan.Attributes()); err != nil || isRow || got.ID != 9 {
		t.Errorf("an orphan's Resource gave %+v (row %t, %v); want session 9 without a row", got, isRow, err)
	}
	for name, attrs := range map[string][]attribute.KeyValue{
		"no id":              {attribute.String("service.name", "x")},
		"an id not a number": {spanbridge.SessionIDKey.String("abc")},
		"an id as an int":    {spanbridge.SessionIDKey.Int(12)},
	} {
		if _, _, err := spanbridge.FromResource(attrs); !errors.Is(err, spanbridge.ErrNotRecord) {
			t.Errorf("%s: FromResource error %v, want ErrNotRecord", name, err)
		}
	}
}
