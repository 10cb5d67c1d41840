package spanbridge_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// sessionStart is when the round trip's session starts. Its nanoseconds
// are not round, so an offset or a wall kept to a coarser unit shows.
var sessionStart = time.Date(2026, 3, 4, 5, 6, 7, 123_456_789, time.UTC)

// at is the timestamp of a span or event d after the session starts.
func at(d time.Duration) trace.SpanStartEventOption { return trace.WithTimestamp(sessionStart.Add(d)) }

// A field is one thing a span says, as a value reflect.DeepEqual compares
// and %v prints readably.
type field struct {
	name string
	of   func(sdktrace.ReadOnlySpan) any
}

// roundTripped lists what a span keeps through a round trip to a record
// and back: every field a record stores.
//
// Not round-tripped, because a record does not store them: the
// records.effect attribute (the record keeps it as its Effect, which Span
// does not send), the flags of a linked span context and its dropped
// attribute count, the parent's remote flag, and the scope's schema URL and
// attributes. When a record stores one, add its field here and a case to
// TestRoundTrip that sets it.
var roundTripped = []field{
	{"name", func(s sdktrace.ReadOnlySpan) any { return s.Name() }},
	// Times relative to the session's start: a record keeps offsets, and
	// its session's start is its id.
	{"start", func(s sdktrace.ReadOnlySpan) any { return s.StartTime().Sub(sessionStart) }},
	{"end", func(s sdktrace.ReadOnlySpan) any { return s.EndTime().Sub(sessionStart) }},
	{"records.kind", func(s sdktrace.ReadOnlySpan) any { return kind(s) }},
	{"attributes", func(s sdktrace.ReadOnlySpan) any { return attrs(s.Attributes()) }},
	{"status", func(s sdktrace.ReadOnlySpan) any { return s.Status() }},
	{"events", func(s sdktrace.ReadOnlySpan) any {
		var evs []string
		for _, e := range s.Events() {
			evs = append(evs, fmt.Sprintf("%q at %v %v", e.Name, e.Time.Sub(sessionStart), attrs(e.Attributes)))
		}
		return evs
	}},
	{"trace id", func(s sdktrace.ReadOnlySpan) any { return s.SpanContext().TraceID() }},
	{"span id", func(s sdktrace.ReadOnlySpan) any { return s.SpanContext().SpanID() }},
	{"parent span id", func(s sdktrace.ReadOnlySpan) any { return s.Parent().SpanID() }},
	{"instrumentation scope", func(s sdktrace.ReadOnlySpan) any { return s.InstrumentationScope() }},
	{"span kind", func(s sdktrace.ReadOnlySpan) any { return s.SpanKind() }},
	{"trace state", func(s sdktrace.ReadOnlySpan) any { return s.SpanContext().TraceState().String() }},
	{"links", func(s sdktrace.ReadOnlySpan) any {
		var ls []string
		for _, l := range s.Links() {
			ls = append(ls, fmt.Sprintf("%s/%s [%s] %v", l.SpanContext.TraceID(), l.SpanContext.SpanID(), l.SpanContext.TraceState(), attrs(l.Attributes)))
		}
		return ls
	}},
	{"dropped counts", func(s sdktrace.ReadOnlySpan) any {
		return fmt.Sprintf("attributes %d, events %d, links %d", s.DroppedAttributes(), s.DroppedEvents(), s.DroppedLinks())
	}},
}

// attrs writes attributes as key=TYPE("value"), sorted, so that a value
// that comes back with another type (an int64 as a float64, a slice as a
// string) differs. It writes them as a round trip gives them back, which
// the records contract defines: without records.kind (see kind),
// records.effect, records.seq and the other attributes Span adds (which
// FromSpan reads), heavy attributes without their prefix.
func attrs(kvs []attribute.KeyValue) []string {
	out := []string{}
	for _, kv := range kvs {
		switch kv.Key {
		case spanbridge.KindKey, spanbridge.EffectKey, spanbridge.SeqKey, spanbridge.InputsKey, spanbridge.SpanKindKey, spanbridge.DerivedIDsKey:
			continue
		}
		k, _ := strings.CutPrefix(string(kv.Key), spanbridge.FullPrefix)
		out = append(out, fmt.Sprintf("%s=%s(%q)", k, kv.Value.Type(), kv.Value.Emit()))
	}
	slices.Sort(out)
	return out
}

// kind is a span's records.kind, which a mark has as a span again.
func kind(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == spanbridge.KindKey {
			return kv.Value.AsString()
		}
	}
	return sessions.MarksKind
}

// roundTrip maps an ended span to a record at level full, as the exporter
// does, stamps it as seq in the session that started at sessionStart,
// stores it (encoded, in a memory store), reads it back, and maps the
// record back to a span, as replay does.
func roundTrip(t *testing.T, s sdktrace.ReadOnlySpan, seq uint64, res *resource.Resource) sdktrace.ReadOnlySpan {
	t.Helper()
	m := spanbridge.Map(s, sessions.LevelFull, -1)
	st := sessions.Stamp{
		Session: sessions.SessionID(sessionStart.UnixNano()),
		Seq:     seq,
		Offset:  s.StartTime().Sub(sessionStart),
	}
	store := sessions.NewMemStore()
	if err := store.Write([]sessions.Entry{testsupport.RecordEntry(t, m.Kind, st, m.Record)}); err != nil {
		t.Fatal(err)
	}
	for stored, err := range sessions.NewRecords(store).All(m.Kind) {
		if err != nil {
			t.Fatal(err)
		}
		out := spanbridge.Span(res, m.Kind, stored)
		// And back again: the span gives the stored record, exactly.
		kind, back, err := spanbridge.FromSpan(st.Session, out)
		if err != nil || kind != m.Kind || !reflect.DeepEqual(back, stored) {
			t.Errorf("span %q: FromSpan gave %s %+v (%v)\nwant %s %+v", s.Name(), kind, back, err, m.Kind, stored)
		}
		return out
	}
	t.Fatalf("span %q: its record was not read back", s.Name())
	return nil
}

func TestRoundTrip(t *testing.T) {
	linked := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x11, 15: 0x22}, SpanID: trace.SpanID{0x33, 7: 0x44},
		TraceState: mustTraceState("vendor=linked"), TraceFlags: trace.FlagsSampled,
	})
	cases := []struct {
		name string
		// run starts and ends the case's spans on a provider of its own.
		run func(tp trace.TracerProvider)
		// limits, when set, are the provider's span limits.
		limits *sdktrace.SpanLimits
	}{
		{name: "attributes of every type", run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("t").Start(context.Background(), "every type", append(spanbridge.Record("autotune",
				attribute.Bool("bool", true),
				attribute.Int64("int64", math.MinInt64),
				attribute.Int("int", 7),
				attribute.Float64("float64", -1.0000000000000002e-300),
				attribute.Float64("infinity", math.Inf(-1)),
				attribute.Float64("whole float64", 3), // stays a float, not an int
				attribute.String("string", "tab\there, ünïcode"),
				attribute.String("empty string", ""),
				attribute.BoolSlice("bools", []bool{true, false, true}),
				attribute.Int64Slice("int64s", []int64{math.MaxInt64, 0, -1}),
				attribute.Float64Slice("float64s", []float64{0.1, 0, -0.5, math.MaxFloat64}),
				attribute.StringSlice("strings", []string{"a", "", "c"}),
				attribute.StringSlice("no strings", nil),
				attribute.KeyValue{Key: "no value"}, // OTLP's empty AnyValue
			), at(1))...)
			s.End(trace.WithTimestamp(sessionStart.Add(2*time.Second + 1)))
		}},
		{name: "status unset", run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("t").Start(context.Background(), "unset", at(3))
			s.End(trace.WithTimestamp(sessionStart.Add(5)))
		}},
		{name: "status ok", run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("t").Start(context.Background(), "ok", append(spanbridge.Record("compile"), at(3))...)
			s.SetStatus(codes.Ok, "the SDK drops an ok status's description")
			s.End(trace.WithTimestamp(sessionStart.Add(time.Hour)))
		}},
		{name: "status error", run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("t").Start(context.Background(), "error", append(spanbridge.Record("compile"), at(999_999_999))...)
			s.SetStatus(codes.Error, "candidate simd failed: illegal instruction")
			s.End(trace.WithTimestamp(sessionStart.Add(time.Second)))
		}},
		{name: "events", run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("t").Start(context.Background(), "tune", append(spanbridge.Record("autotune"), at(10))...)
			s.AddEvent("no attributes", at(10))
			s.AddEvent("candidate", at(17), trace.WithAttributes(attribute.String("name", "tiled"), attribute.Float64("ms", 1.25),
				attribute.Int64Slice("shape", []int64{128, 128}), spanbridge.Full(attribute.String("ir", "..."))))
			s.RecordError(errors.New("simd: illegal instruction"), at(time.Millisecond+3))
			s.SetAttributes(spanbridge.Changed())
			s.End(trace.WithTimestamp(sessionStart.Add(2 * time.Millisecond)))
		}},
		{name: "parent and children", run: func(tp trace.TracerProvider) {
			tr := tp.Tracer("t")
			ctx, build := tr.Start(context.Background(), "build", at(0)) // a mark
			cctx, tune := tr.Start(ctx, "tune", append(spanbridge.Record("autotune"), at(1))...)
			_, bench := tr.Start(cctx, "bench", at(2))
			bench.End(trace.WithTimestamp(sessionStart.Add(3)))
			tune.End(trace.WithTimestamp(sessionStart.Add(4)))
			build.End(trace.WithTimestamp(sessionStart.Add(5)))
		}},
		{name: "remote parent", run: func(tp trace.TracerProvider) {
			remote := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{0xca, 0xfe, 15: 1}, SpanID: trace.SpanID{0xbe, 0xef, 7: 2},
				TraceFlags: trace.FlagsSampled, Remote: true,
			})
			ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
			_, s := tp.Tracer("t").Start(ctx, "handle request", at(40))
			s.End(trace.WithTimestamp(sessionStart.Add(41)))
		}},
		{name: "instrumentation scope", run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("example.com/tuner", trace.WithInstrumentationVersion("v1.2.3")).
				Start(context.Background(), "scoped", append(spanbridge.Record("autotune"), at(50))...)
			s.End(trace.WithTimestamp(sessionStart.Add(60)))
		}},
		{name: "span kinds", run: func(tp trace.TracerProvider) {
			for i, k := range []trace.SpanKind{trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer} {
				_, s := tp.Tracer("t").Start(context.Background(), k.String(), at(time.Duration(100+i)), trace.WithSpanKind(k))
				s.End(trace.WithTimestamp(sessionStart.Add(200)))
			}
		}},
		{name: "links and trace state", run: func(tp trace.TracerProvider) {
			parent := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{0xaa, 15: 1}, SpanID: trace.SpanID{0xbb, 7: 1},
				TraceFlags: trace.FlagsSampled, Remote: true,
				TraceState: mustTraceState("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
			})
			ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
			_, s := tp.Tracer("t").Start(ctx, "batch", append(spanbridge.Record("compile"), at(300), trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithLinks(
					trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "request"), attribute.Int("n", 1)}},
					trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}})},
				))...)
			s.AddLink(trace.Link{SpanContext: linked})
			s.End(trace.WithTimestamp(sessionStart.Add(400)))
		}},
		{name: "dropped counts", limits: &sdktrace.SpanLimits{
			AttributeCountLimit: 3, EventCountLimit: 1, LinkCountLimit: 1,
			AttributeValueLengthLimit: -1, AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1,
		}, run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("t").Start(context.Background(), "full", append(spanbridge.Record("autotune",
				attribute.Int("a", 1), attribute.Int("b", 2), attribute.Int("c", 3)), at(500), trace.WithLinks(trace.Link{SpanContext: linked}, trace.Link{SpanContext: linked}))...)
			s.AddEvent("one", at(501))
			s.AddEvent("two", at(502))
			s.AddEvent("three", at(503))
			s.SetAttributes(spanbridge.Changed()) // updates a key the span has: kept at the limit
			s.End(trace.WithTimestamp(sessionStart.Add(600)))
		}},
		{name: "heavy attribute", run: func(tp trace.TracerProvider) {
			_, s := tp.Tracer("t").Start(context.Background(), "compile", append(spanbridge.Record("compile",
				spanbridge.Full(attribute.String("source", "kernel void f() {}")), attribute.String("kernel", "f")), at(70))...)
			s.End(trace.WithTimestamp(sessionStart.Add(80)))
		}},
	}
	res := spanbridge.Resource(sessions.Session{ID: sessions.SessionID(sessionStart.UnixNano())})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			opts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}
			if c.limits != nil {
				opts = append(opts, sdktrace.WithRawSpanLimits(*c.limits))
			}
			tp := sdktrace.NewTracerProvider(opts...)
			c.run(tp)
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			ended := rec.Ended()
			if len(ended) == 0 {
				t.Fatal("the case ended no span")
			}
			for seq, in := range ended {
				out := roundTrip(t, in, uint64(seq), res)
				for _, f := range roundTripped {
					if want, got := f.of(in), f.of(out); !reflect.DeepEqual(got, want) {
						t.Errorf("span %q: %s came back as\n\t%v\nwant\n\t%v", in.Name(), f.name, got, want)
					}
				}
				set := attribute.NewSet(out.Attributes()...)
				if v, ok := set.Value(spanbridge.SeqKey); !ok || v.AsInt64() != int64(seq) {
					t.Errorf("span %q: %s = %v, want %d", in.Name(), spanbridge.SeqKey, v.Emit(), seq)
				}
				if out.Resource() != res {
					t.Errorf("span %q: resource %v, want the session's", in.Name(), out.Resource())
				}
			}
		})
	}
}

func mustTraceState(s string) trace.TraceState {
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		panic(err)
	}
	return ts
}
