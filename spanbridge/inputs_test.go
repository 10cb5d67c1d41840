package spanbridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// inputCounter is a span processor that does what the exporter does with
// inputs: InputCount in OnStart, Map with that count in OnEnd.
type inputCounter struct {
	level  sessions.Level
	mu     sync.Mutex
	counts map[trace.SpanID]int
	mapped []spanbridge.Mapped
}

func (p *inputCounter) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	n := spanbridge.InputCount(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts == nil {
		p.counts = map[trace.SpanID]int{}
	}
	p.counts[s.SpanContext().SpanID()] = n
}

func (p *inputCounter) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mapped = append(p.mapped, spanbridge.Map(s, p.level, p.counts[s.SpanContext().SpanID()]))
}

func (*inputCounter) Shutdown(context.Context) error   { return nil }
func (*inputCounter) ForceFlush(context.Context) error { return nil }

// mapped runs one span on a provider with the given options and returns
// its record as the exporter would make it.
func mapped(t *testing.T, level sessions.Level, run func(trace.Tracer), opts ...sdktrace.TracerProviderOption) spanbridge.Mapped {
	t.Helper()
	p := &inputCounter{level: level}
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSpanProcessor(p))...)
	run(tp.Tracer("t"))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(p.mapped) != 1 {
		t.Fatalf("%d spans ended, want 1", len(p.mapped))
	}
	return p.mapped[0]
}

func TestInputs(t *testing.T) {
	cands := attribute.StringSlice("candidates", []string{"tiled", "simd"})
	cases := []struct {
		name   string
		level  sessions.Level
		limits *sdktrace.SpanLimits
		run    func(trace.Tracer)
		inputs []string // nil: not known or no attributes
		// values the record must hold, key=value
		values []string
	}{
		{name: "given at start, set while running", level: sessions.LevelBasic, run: func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "tune", spanbridge.Record("autotune", attribute.String("autotune.key", "matmul"), cands)...)
			s.SetAttributes(attribute.String("winner", "tiled"), spanbridge.Changed())
			s.End()
		}, inputs: []string{"autotune.key", "candidates"}},
		{name: "an input set again keeps its place and its last value", level: sessions.LevelBasic, run: func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "tune", spanbridge.Record("autotune", attribute.String("autotune.key", "matmul"), cands)...)
			s.SetAttributes(attribute.String("winner", "simd"), attribute.StringSlice("candidates", []string{"simd"}))
			s.End()
		}, inputs: []string{"autotune.key", "candidates"}, values: []string{"candidates=[simd]", "winner=simd"}},
		{name: "heavy inputs only at full", level: sessions.LevelBasic, run: func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "compile", spanbridge.Record("compile", spanbridge.Full(attribute.String("source", "...")), attribute.String("kernel", "f"))...)
			s.SetAttributes(attribute.Int("bytes", 10))
			s.End()
		}, inputs: []string{"kernel"}},
		{name: "heavy inputs at full", level: sessions.LevelFull, run: func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "compile", spanbridge.Record("compile", spanbridge.Full(attribute.String("source", "...")), attribute.String("kernel", "f"))...)
			s.SetAttributes(attribute.Int("bytes", 10))
			s.End()
		}, inputs: []string{"source", "kernel"}},
		{name: "nothing given at start", level: sessions.LevelBasic, run: func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "step")
			s.SetAttributes(attribute.Int("found", 3))
			s.End()
		}, inputs: []string{}},
		{name: "no attributes", level: sessions.LevelBasic, run: func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "step", spanbridge.Record("marks")...)
			s.End()
		}, inputs: nil},
		{name: "at the limit: new keys dropped, inputs updated", level: sessions.LevelBasic,
			limits: &sdktrace.SpanLimits{AttributeCountLimit: 4, AttributeValueLengthLimit: -1},
			run: func(tr trace.Tracer) {
				_, s := tr.Start(context.Background(), "tune", spanbridge.Record("autotune", attribute.Int("a", 1), attribute.Int("b", 2))...)
				s.SetAttributes(attribute.Int("c", 3), attribute.Int("a", 10))
				s.End()
			}, inputs: []string{"a", "b"}, values: []string{"a=10"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []sdktrace.TracerProviderOption
			if c.limits != nil {
				opts = append(opts, sdktrace.WithRawSpanLimits(*c.limits))
			}
			m := mapped(t, c.level, c.run, opts...)
			if !slices.Equal(m.Record.Inputs, c.inputs) || (m.Record.Inputs == nil) != (c.inputs == nil) {
				t.Errorf("inputs %#v, want %#v", m.Record.Inputs, c.inputs)
			}
			for _, kv := range m.Record.Attributes {
				if want := slices.Contains(c.inputs, kv.Key); m.Record.IsInput(kv.Key) != want {
					t.Errorf("IsInput(%q) = %t", kv.Key, !want)
				}
			}
			for _, want := range c.values {
				found := false
				for _, kv := range m.Record.Attributes {
					found = found || fmt.Sprintf("%s=%v", kv.Key, kv.Value) == want
				}
				if !found {
					t.Errorf("no attribute %s in %v", want, m.Record.Attributes)
				}
			}
		})
	}
	if m := mapStub(span("x", attribute.Int("a", 1)), sessions.LevelBasic); m.Record.Inputs != nil {
		t.Errorf("inputs not known: %q, want nil", m.Record.Inputs)
	}
}

// TestEffectAtTheAttributeLimit checks what the SDK does at its default
// limit of 128 attributes: a records.effect set on a full span is dropped
// unless the span already has the key, which spanbridge.Record gives it,
// and Map says so when it may have been.
func TestEffectAtTheAttributeLimit(t *testing.T) {
	many := make([]attribute.KeyValue, sdktrace.DefaultAttributeCountLimit)
	for i := range many {
		many[i] = attribute.Int(fmt.Sprintf("param.%03d", i), i)
	}

	withRecord := mapped(t, sessions.LevelBasic, func(tr trace.Tracer) {
		_, s := tr.Start(context.Background(), "tune", spanbridge.Record("autotune", many...)...)
		spanbridge.MarkChanged(s)
		s.End()
	})
	if withRecord.Effect != sessions.Changed || withRecord.Record.Effect != sessions.Changed || withRecord.Kind != "autotune" {
		t.Errorf("started with Record: kind %q effect %v, record effect %v; want autotune, changed", withRecord.Kind, withRecord.Effect, withRecord.Record.Effect)
	}
	// records.kind and records.effect come first, so the limit drops the
	// last two of the 130 given.
	if withRecord.Record.DroppedAttributes != 2 || withRecord.Problem != nil {
		t.Errorf("started with Record: dropped %d, problem %v; want 2, none", withRecord.Record.DroppedAttributes, withRecord.Problem)
	}

	without := mapped(t, sessions.LevelBasic, func(tr trace.Tracer) {
		_, s := tr.Start(context.Background(), "tune", trace.WithAttributes(append([]attribute.KeyValue{spanbridge.Kind("autotune")}, many[1:]...)...))
		spanbridge.MarkChanged(s) // the 129th key: the SDK drops it
		s.End()
	})
	if without.Effect != sessions.Observed || without.Record.DroppedAttributes != 1 {
		t.Fatalf("without Record: effect %v, dropped %d; want the SDK to have dropped the change", without.Effect, without.Record.DroppedAttributes)
	}
	if !errors.Is(without.Problem, spanbridge.ErrAttributesDropped) {
		t.Errorf("without Record: problem %v, want ErrAttributesDropped", without.Problem)
	}

	// Changed given at start wins over the observed Record sets first.
	if m := mapped(t, sessions.LevelBasic, func(tr trace.Tracer) {
		_, s := tr.Start(context.Background(), "compile", spanbridge.Record("compile", spanbridge.Changed())...)
		s.End()
	}); m.Effect != sessions.Changed {
		t.Errorf("Record(kind, Changed()): effect %v, want changed", m.Effect)
	}

	// A span that says its effect has nothing to lose: no problem.
	said := mapped(t, sessions.LevelBasic, func(tr trace.Tracer) {
		_, s := tr.Start(context.Background(), "tune", trace.WithAttributes(append([]attribute.KeyValue{spanbridge.Observed()}, many...)...))
		s.End()
	})
	if said.Record.DroppedAttributes != 1 || said.Problem != nil {
		t.Errorf("with records.effect: dropped %d, problem %v; want 1, none", said.Record.DroppedAttributes, said.Problem)
	}
}
