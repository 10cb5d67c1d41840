package spanbridge_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

var start = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func span(name string, attrs ...attribute.KeyValue) tracetest.SpanStub {
	return tracetest.SpanStub{
		Name:      name,
		StartTime: start,
		EndTime:   start.Add(250 * time.Millisecond),
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled,
		}),
		Parent:               trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{9}}),
		Attributes:           attrs,
		InstrumentationScope: instrumentation.Scope{Name: "build", Version: "1.0"},
	}
}

func mapStub(s tracetest.SpanStub, level sessions.Level) spanbridge.Mapped {
	return spanbridge.Map(s.Snapshot(), level, -1)
}

func TestMapRecord(t *testing.T) {
	s := span("tune matmul", spanbridge.Kind("autotune"), spanbridge.Changed(),
		attribute.String("autotune.key", "matmul/128"), attribute.Int("runs", 3), attribute.StringSlice("candidates", []string{"a", "b"}))
	s.Status = sdktrace.Status{Code: codes.Error, Description: "one candidate failed"}
	s.Events = []sdktrace.Event{{Name: "candidate", Time: start.Add(10 * time.Millisecond), Attributes: []attribute.KeyValue{attribute.String("name", "a")}}}
	m := mapStub(s, sessions.LevelBasic)
	if m.Kind != "autotune" || m.Effect != sessions.Changed || m.Problem != nil {
		t.Fatalf("kind %q effect %v problem %v", m.Kind, m.Effect, m.Problem)
	}
	r := m.Record
	if r.Name != "tune matmul" || r.Wall != 250*time.Millisecond {
		t.Fatalf("name %q wall %v", r.Name, r.Wall)
	}
	if _, ok := r.Attributes.Get(string(spanbridge.KindKey)); ok {
		t.Error("records.kind repeated in the body")
	}
	if _, ok := r.Attributes.Get(string(spanbridge.EffectKey)); ok {
		t.Error("records.effect repeated in the body")
	}
	if v, _ := r.Attributes.Get("runs"); v.Kind() != sessions.KindInt64 || v.AsInt64() != 3 {
		t.Errorf("runs = %v (%s), want int64 3", v, v.Kind())
	}
	if v, _ := r.Attributes.Get("candidates"); v.Kind() != sessions.KindStringSlice {
		t.Errorf("candidates kind = %s", v.Kind())
	}
	if r.Status != (sessions.Status{Code: "error", Description: "one candidate failed"}) {
		t.Errorf("status = %+v", r.Status)
	}
	if len(r.Events) != 1 || r.Events[0].Name != "candidate" || r.Events[0].Offset != 10*time.Millisecond {
		t.Errorf("events = %+v", r.Events)
	}
	if r.TraceID != (sessions.TraceID{1, 2, 3}) || r.SpanID != (sessions.SpanID{4, 5}) || r.ParentSpanID != (sessions.SpanID{9}) {
		t.Errorf("ids = %v %v %v", r.TraceID, r.SpanID, r.ParentSpanID)
	}
	if r.Scope != (sessions.Scope{Name: "build", Version: "1.0"}) {
		t.Errorf("scope = %+v", r.Scope)
	}
}

func TestMapMark(t *testing.T) {
	s := span("load weights", attribute.Int("files", 2))
	s.Parent = trace.SpanContext{}
	m := mapStub(s, sessions.LevelBasic)
	if m.Kind != sessions.MarksKind || m.Effect != sessions.Observed || m.Record.Name != "load weights" || m.Record.Wall != 250*time.Millisecond {
		t.Fatalf("mark = %+v", m)
	}
	if !m.Record.ParentSpanID.IsZero() {
		t.Fatal("root span has a parent id")
	}
}

func TestHeavyAttributesOnlyAtFull(t *testing.T) {
	s := span("compile", spanbridge.Kind("compile"), spanbridge.Full(attribute.String("source", "kernel void f() {}")), attribute.String("kernel", "f"))
	s.Events = []sdktrace.Event{{Name: "ir", Time: start, Attributes: []attribute.KeyValue{spanbridge.Full(attribute.String("ir", "..."))}}}
	basic := mapStub(s, sessions.LevelBasic).Record
	if _, ok := basic.Attributes.Get("source"); ok {
		t.Error("heavy attribute kept at level basic")
	}
	if _, ok := basic.Attributes.Get("records.full.source"); ok {
		t.Error("heavy attribute kept (prefixed) at level basic")
	}
	if len(basic.Events[0].Attributes) != 0 {
		t.Error("heavy event attribute kept at level basic")
	}
	if _, ok := basic.Attributes.Get("kernel"); !ok {
		t.Error("ordinary attribute dropped at level basic")
	}
	full := mapStub(s, sessions.LevelFull).Record
	if v, ok := full.Attributes.Get("source"); !ok || v.AsString() != "kernel void f() {}" {
		t.Errorf("at level full, source = %v, %v; want it stored without its prefix", v, ok)
	}
	if _, ok := full.Events[0].Attributes.Get("ir"); !ok {
		t.Error("heavy event attribute dropped at level full")
	}
}

func TestInvalidKindBecomesMark(t *testing.T) {
	for _, kv := range []attribute.KeyValue{
		spanbridge.Kind(""), spanbridge.Kind("sessions"), spanbridge.Kind("a\x00b"),
		spanbridge.Kind(strings.Repeat("k", 10<<10)), spanbridge.KindKey.Int(7),
	} {
		m := mapStub(span("x", kv, spanbridge.Changed()), sessions.LevelBasic)
		if m.Kind != sessions.MarksKind {
			t.Errorf("kind %v: mapped to %q, want marks", kv.Value.Emit(), m.Kind)
		}
		if !errors.Is(m.Problem, sessions.ErrInvalidKind) {
			t.Errorf("kind %v: problem = %v, want ErrInvalidKind", kv.Value.Emit(), m.Problem)
		}
		v, ok := m.Record.Attributes.Get(string(spanbridge.InvalidKindKey))
		if !ok || len(v.AsString()) > 256 {
			t.Errorf("kind %v: %s = %q", kv.Value.Emit(), spanbridge.InvalidKindKey, v)
		}
		if m.Effect != sessions.Changed {
			t.Errorf("kind %v: effect lost", kv.Value.Emit())
		}
	}
}

func TestInvalidEffectIsObserved(t *testing.T) {
	m := mapStub(span("x", spanbridge.Kind("k"), spanbridge.EffectKey.String("chnaged")), sessions.LevelBasic)
	if m.Effect != sessions.Observed || m.Problem == nil {
		t.Fatalf("effect %v problem %v; want observed with a problem", m.Effect, m.Problem)
	}
	if m := mapStub(span("x", spanbridge.Kind("k"), spanbridge.Observed()), sessions.LevelBasic); m.Effect != sessions.Observed || m.Problem != nil {
		t.Fatalf("observed: %v %v", m.Effect, m.Problem)
	}
}

func TestValueTypes(t *testing.T) {
	cases := []struct {
		in   attribute.Value
		kind sessions.ValueKind
	}{
		{attribute.BoolValue(true), sessions.KindBool},
		{attribute.Int64Value(1), sessions.KindInt64},
		{attribute.Float64Value(1.5), sessions.KindFloat64},
		{attribute.StringValue("s"), sessions.KindString},
		{attribute.BoolSliceValue([]bool{true}), sessions.KindBoolSlice},
		{attribute.Int64SliceValue([]int64{1}), sessions.KindInt64Slice},
		{attribute.Float64SliceValue([]float64{1}), sessions.KindFloat64Slice},
		{attribute.StringSliceValue([]string{"a"}), sessions.KindStringSlice},
		{attribute.ByteSliceValue([]byte("ab")), sessions.KindString},
	}
	for _, c := range cases {
		if got := spanbridge.Value(c.in).Kind(); got != c.kind {
			t.Errorf("Value(%s) kind = %s, want %s", c.in.Type(), got, c.kind)
		}
	}
}

// TestMapToReusesItsRecord checks that MapTo gives what Map gives, span
// after span into one Mapped, Inputs and Attributes included (empty inputs
// stay an empty list, no attributes stay none), and that once its slices
// have grown mapping a span allocates nothing of its own.
func TestMapToReusesItsRecord(t *testing.T) {
	wide := span("wide", spanbridge.Kind("compile"), attribute.Bool("hit", true), attribute.Int("n", 7), attribute.Bool("cold", false))
	controls := span("controls", spanbridge.Kind("compile"), spanbridge.Changed(), attribute.Bool("late", true))
	bare := span("bare")
	var m spanbridge.Mapped
	for _, c := range []struct {
		s      tracetest.SpanStub
		inputs int
	}{{wide, 3}, {controls, 2}, {bare, 0}, {wide, -1}, {controls, 2}} {
		ro := c.s.Snapshot()
		spanbridge.MapTo(&m, ro, sessions.LevelBasic, c.inputs)
		want := spanbridge.Map(ro, sessions.LevelBasic, c.inputs)
		if m.Kind != want.Kind || m.Effect != want.Effect || !reflect.DeepEqual(m.Record, want.Record) {
			t.Fatalf("MapTo(%s, inputs %d) = %+v, want Map's %+v", c.s.Name, c.inputs, m.Record, want.Record)
		}
	}
	ro := wide.Snapshot()
	if allocs := testing.AllocsPerRun(100, func() { spanbridge.MapTo(&m, ro, sessions.LevelBasic, 3) }); allocs != 0 {
		t.Errorf("MapTo of a span of bools and small ints allocated %v times, want 0", allocs)
	}
}

// TestMapToLetsAWideSpanGo checks that the room MapTo keeps is bounded:
// after a span wider than the SDK's default limit, the next span still
// maps as Map maps it, and a narrow one afterwards allocates only for its
// own attributes, not for the wide span's leftovers kept.
func TestMapToLetsAWideSpanGo(t *testing.T) {
	wide := make([]attribute.KeyValue, 0, 300)
	for i := range 300 {
		wide = append(wide, attribute.Bool(fmt.Sprintf("k%03d", i), true))
	}
	var m spanbridge.Mapped
	spanbridge.MapTo(&m, span("wide", wide...).Snapshot(), sessions.LevelBasic, 300)
	if len(m.Record.Attributes) != 300 || len(m.Record.Inputs) != 300 {
		t.Fatalf("wide span: %d attributes, %d inputs, want 300 each", len(m.Record.Attributes), len(m.Record.Inputs))
	}
	narrow := span("narrow", attribute.Bool("hit", true)).Snapshot()
	spanbridge.MapTo(&m, narrow, sessions.LevelBasic, 1)
	if want := spanbridge.Map(narrow, sessions.LevelBasic, 1); !reflect.DeepEqual(m.Record, want.Record) {
		t.Fatalf("after a wide span, MapTo = %+v, want %+v", m.Record, want.Record)
	}
	if c := cap(m.Record.Attributes); c > 128 {
		t.Errorf("after a wide span, a narrow one's attributes have room for %d: the wide span's was kept", c)
	}
}
