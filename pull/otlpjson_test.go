package pull

import (
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

// OTLP JSON's values come back with their types, whichever way the
// encoding lets a writer put them (64-bit integers as strings or numbers,
// doubles that JSON has no number for as strings); what the API has no
// type for is kept as its JSON text.
func TestOTLPJSONValues(t *testing.T) {
	body := `{"result": {"resourceSpans": [{"resource": {"attributes": [
		{"key": "s", "value": {"stringValue": "x"}},
		{"key": "i as text", "value": {"intValue": "-9223372036854775808"}},
		{"key": "i as number", "value": {"intValue": 42}},
		{"key": "d", "value": {"doubleValue": 1e-300}},
		{"key": "d as text", "value": {"doubleValue": "2.5"}},
		{"key": "nan", "value": {"doubleValue": "NaN"}},
		{"key": "inf", "value": {"doubleValue": "-Infinity"}},
		{"key": "b", "value": {"boolValue": false}},
		{"key": "ints", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"intValue": 2}]}}},
		{"key": "empty array", "value": {"arrayValue": {}}},
		{"key": "mixed", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "a"}]}}},
		{"key": "map", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": true}}]}}},
		{"key": "bytes", "value": {"bytesValue": "aGk="}},
		{"key": "empty", "value": {}}
	]}, "scopeSpans": []}]}, "extra": 1}`
	var got []attribute.KeyValue
	err := readTraces(strings.NewReader(body), 1<<20, traceSink{
		resource: func(attrs []keyValue) error { got = attributes(attrs); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]attribute.Value{
		"s":           attribute.StringValue("x"),
		"i as text":   attribute.Int64Value(math.MinInt64),
		"i as number": attribute.Int64Value(42),
		"d":           attribute.Float64Value(1e-300),
		"d as text":   attribute.Float64Value(2.5),
		"inf":         attribute.Float64Value(math.Inf(-1)),
		"b":           attribute.BoolValue(false),
		"ints":        attribute.Int64SliceValue([]int64{1, 2}),
		"empty array": attribute.StringSliceValue([]string{}),
		"mixed":       attribute.StringValue(`[1,"a"]`),
		"map":         attribute.StringValue(`{"k":true}`),
		"bytes":       attribute.StringValue("aGk="),
		"empty":       {},
	}
	for _, kv := range got {
		if kv.Key == "nan" {
			if kv.Value.Type() != attribute.FLOAT64 || !math.IsNaN(kv.Value.AsFloat64()) {
				t.Errorf("nan: %s %v", kv.Value.Type(), kv.Value.Emit())
			}
			continue
		}
		w, ok := want[string(kv.Key)]
		if !ok || kv.Value.Type() != w.Type() || kv.Value.Emit() != w.Emit() {
			t.Errorf("%s: %s %q, want %s %q", kv.Key, kv.Value.Type(), kv.Value.Emit(), w.Type(), w.Emit())
		}
	}
	if len(got) != len(want)+1 {
		t.Errorf("%d attributes, want %d", len(got), len(want)+1)
	}

	// Answers that are no OTLP JSON are errors, not empty pulls; an
	// answer without spans is none.
	for _, bad := range []string{`[]`, `{"result": {"resourceSpans": {}}}`, `{"result": {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}}`,
		`{"result": {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "-1"}]}]}]}}`} {
		if err := readTraces(strings.NewReader(bad), 1<<20, anySink); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	called := func(*span) error { t.Error("called"); return nil }
	if err := readTraces(strings.NewReader(`{"result": {}}`), 1<<20, traceSink{span: called}); err != nil {
		t.Errorf("an answer without spans: %v", err)
	}
}

// anySink takes every span, and steps over none.
var anySink = traceSink{
	resource: func([]keyValue) error { return nil },
	span:     func(*span) error { return nil },
	stepped:  func([16]byte, bool) error { return nil },
}

// Spans that come before their Resource or their scope wait for them, and
// are handed on after the Resource with their scope set; a ScopeSpans
// without a scope has the empty one. What waits is bounded by the limit.
func TestOTLPJSONOutOfOrder(t *testing.T) {
	spanJSON := func(name string) string {
		return `{"traceId":"0000000000000000000000000000000a","spanId":"000000000000000b","name":"` + name + `"}`
	}
	body := `{"result": {"resourceSpans": [{"scopeSpans": [
		{"spans": [` + spanJSON("a") + `], "scope": {"name": "first", "version": "1"}},
		{"spans": [` + spanJSON("b") + `]},
		{"scope": {"name": "third"}, "spans": [` + spanJSON("c") + `]}],
	"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}}]}}`
	var got []string
	err := readTraces(strings.NewReader(body), 1<<20, traceSink{
		resource: func(attrs []keyValue) error { got = append(got, "resource "+attrs[0].Key); return nil },
		span:     func(s *span) error { got = append(got, s.SpanName+" in "+s.scope.Name+" "+s.scope.Version); return nil },
		stepped:  func([16]byte, bool) error { t.Error("stepped"); return nil },
	})
	want := []string{"resource service.name", "a in first 1", "b in  ", "c in third "}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%q, %v; want %q", got, err, want)
	}
	if err := readTraces(strings.NewReader(body), 200, anySink); err == nil || !strings.Contains(err.Error(), "before their Resource or scope past 200 bytes") {
		t.Errorf("spans waiting past the limit: %v", err)
	}
}
