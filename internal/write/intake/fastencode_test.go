package intake

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// randomSpan ends one span on tr whose every part is drawn from r: plain
// most of the time, and every way of not being plain some of the time.
func randomSpan(r *rand.Rand, tr trace.Tracer, parent context.Context) {
	pick := func(p float64) bool { return r.Float64() < p }
	var attrs []attribute.KeyValue
	if pick(0.8) {
		kinds := []string{"compile", "lookup/artifact", "/trimmed/", "tune"}
		if pick(0.1) {
			kinds = []string{"", "sessions", "a\x00b", strings.Repeat("k", 300)}
		}
		attrs = append(attrs, spanbridge.KindKey.String(kinds[r.IntN(len(kinds))]))
	}
	if pick(0.05) {
		attrs = append(attrs, spanbridge.KindKey.Int(7))
	}
	if pick(0.5) {
		effects := []string{spanbridge.EffectChanged, spanbridge.EffectObserved, spanbridge.EffectChanged, spanbridge.EffectObserved, spanbridge.EffectObserved, "maybe"}
		attrs = append(attrs, spanbridge.EffectKey.String(effects[r.IntN(len(effects))]))
	}
	for i := range r.IntN(8) {
		// Some keys a tally tells records apart by (cache.key) or counts
		// (cache.result) too.
		key := fmt.Sprintf("k%d.%s", r.IntN(20), []string{"", "x", "xx", "xxx", "key", "result"}[r.IntN(6)])
		switch r.IntN(40) {
		case 0:
			attrs = append(attrs, attribute.Bool(key, pick(0.5)))
		case 1:
			attrs = append(attrs, attribute.Int64(key, r.Int64()-math.MaxInt64/2))
		case 2:
			attrs = append(attrs, attribute.Int(key, r.IntN(300)-150))
		case 3:
			attrs = append(attrs, attribute.Float64(key, r.NormFloat64()*1e6))
		case 4:
			attrs = append(attrs, attribute.Float64(key, []float64{math.NaN(), math.Inf(1), 0, -0.5}[r.IntN(4)]))
		case 5:
			attrs = append(attrs, attribute.StringSlice(key, []string{"a", "b"}))
		case 6:
			attrs = append(attrs, attribute.String(spanbridge.FullPrefix+key, "heavy"))
		case 7:
			attrs = append(attrs, attribute.String(key, strings.Repeat("v", 1000+r.IntN(50))))
		case 8:
			attrs = append(attrs, attribute.String(key, "héllo wörld"))
		default:
			attrs = append(attrs, attribute.String(key, fmt.Sprint("v", i, r.IntN(1000))))
		}
	}
	started, later := attrs, []attribute.KeyValue(nil)
	if n := len(attrs); n > 0 && pick(0.3) {
		cut := r.IntN(n + 1)
		started, later = attrs[:cut], attrs[cut:]
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(started...)}
	if pick(0.7) {
		kinds := []trace.SpanKind{trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer}
		opts = append(opts, trace.WithSpanKind(kinds[r.IntN(len(kinds))]))
	}
	if pick(0.05) {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: trace.SpanContextFromContext(parent)}))
	}
	if pick(0.1) {
		opts = append(opts, trace.WithTimestamp(time.Date(1000+r.IntN(2000), 1, 1, 0, 0, 0, 0, time.UTC)))
	}
	names := []string{"build", "", "ünïcode", "build", "link", "test", "vet", strings.Repeat("n", 1030)}
	ctx, s := tr.Start(parent, names[r.IntN(len(names))], opts...)
	_ = ctx
	if len(later) > 0 {
		s.SetAttributes(later...)
	}
	if pick(0.05) {
		s.AddEvent("ev")
	}
	if pick(0.1) {
		s.SetStatus([]codes.Code{codes.Ok, codes.Error}[r.IntN(2)], "why")
	}
	s.End()
}

// TestPlainEncodingIsTheRecords: for every span appendPlain takes, it
// appends the very bytes, and says the very kind and effect, that mapping
// the span to its record and encoding that record does (encodeMapped);
// and it takes the plain spans, and no other.
func TestPlainEncodingIsTheRecords(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := rand.New(rand.NewPCG(1, 25))
	scopes := []trace.Tracer{
		tp.Tracer("test"),
		tp.Tracer("", trace.WithInstrumentationVersion("v1.2.3")),
		tp.Tracer("scoped", trace.WithInstrumentationVersion("0.1")),
	}
	root, parent := context.Background(), context.Background()
	for i := range 20000 {
		tr := scopes[r.IntN(len(scopes))]
		if i%50 == 0 {
			var s trace.Span
			parent, s = tr.Start(root, "parent")
			defer s.End()
		}
		ctx := parent
		if i%3 == 0 {
			ctx = root
		}
		randomSpan(r, tr, ctx)
	}
	spans := rec.Ended()
	// Spans from elsewhere may repeat a key (the SDK's never do): the
	// later one wins, in both.
	stub := tracetest.SpanStub{Name: "dup", StartTime: time.Now(), EndTime: time.Now().Add(time.Millisecond),
		Attributes: []attribute.KeyValue{spanbridge.KindKey.String("dup"), attribute.String("a", "1"), attribute.Int("a", 2), attribute.Bool("b", true)}}
	dup := stub.Snapshot()
	if _, _, ok := appendPlain(nil, dup, 3, sessions.Stamp{}); !ok {
		t.Fatal("a span repeating a key is not plain")
	}
	spans = append(spans, dup)

	plain := 0
	var w, m Scratch
	for i, s := range spans {
		st := sessions.Stamp{Session: sessions.SessionID(1 + r.Uint64()>>1), Seq: uint64(i), Offset: time.Duration(r.Int64N(1 << 40))}
		inputs := []int{-1, 0, 2, 100}[r.IntN(4)]
		got, enc, ok := appendPlain(w.Buf[:0], s, inputs, st)
		kind, effect := enc.Kind, enc.Effect
		want := EncodeMapped(&m, s, sessions.LevelBasic, inputs, st)
		if !ok {
			continue
		}
		plain++
		if want.Err != nil || want.Problem != nil || want.Cut {
			t.Fatalf("span %d (%q) is plain, but its record is not: err %v, problem %v, cut %v", i, s.Name(), want.Err, want.Problem, want.Cut)
		}
		if !bytes.Equal(got, m.Buf) || kind != want.Kind || effect != want.Effect {
			t.Fatalf("span %d (%q, attrs %v, inputs %d):\nplain  %x %q %v\nmapped %x %q %v", i, s.Name(), s.Attributes(), inputs, got, kind, effect, m.Buf, want.Kind, want.Effect)
		}
		// A tally reads the record where the hint says (it fits every
		// plain record) as it reads it walking the value.
		hinted, walked := tally.New(), tally.New()
		fit := hinted.AddHinted([]byte(kind), got, enc.Hint)
		walked.Add([]byte(kind), got)
		ht, err1 := hinted.Tally(1, 1).MarshalCBOR()
		wt, err2 := walked.Tally(1, 1).MarshalCBOR()
		if !fit || err1 != nil || err2 != nil || !bytes.Equal(ht, wt) {
			t.Fatalf("span %d (%q, attrs %v): hint %+v\nhinted %x %v\nwalked %x %v", i, s.Name(), s.Attributes(), enc.Hint, ht, err1, wt, err2)
		}
		w.Buf = got
	}
	if plain < len(spans)/4 || plain == len(spans) {
		t.Errorf("%d of %d spans plain: the draw should give both kinds in numbers", plain, len(spans))
	}
	t.Logf("%d of %d spans plain, each the same bytes as its record's", plain, len(spans))
}

// BenchmarkEncodeSpan is what encoding an ended span of four attributes
// costs the goroutine that ended it: straight from the span (plain), and
// by way of its record (mapped), as encodeRecord did for every span.
func BenchmarkEncodeSpan(b *testing.B) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, s := tp.Tracer("bench").Start(context.Background(), "compile", trace.WithAttributes(
		spanbridge.KindKey.String("compile"),
		attribute.String("unit", "pkg/one"),
		attribute.Int("n", 1234),
		attribute.Bool("opt", true),
	))
	s.End()
	span := rec.Ended()[0]
	st := sessions.Stamp{Session: 1764672000123456789, Seq: 123456, Offset: 1234567890}
	for _, way := range []struct {
		name   string
		encode func(*Scratch) Encoded
	}{
		{"plain", func(w *Scratch) Encoded { return EncodeRecord(w, span, sessions.LevelBasic, 4, st) }},
		{"mapped", func(w *Scratch) Encoded { return EncodeMapped(w, span, sessions.LevelBasic, 4, st) }},
	} {
		b.Run(way.name, func(b *testing.B) {
			var w Scratch
			b.ReportAllocs()
			for b.Loop() {
				if enc := way.encode(&w); enc.Kind != "compile" {
					b.Fatalf("kind %q", enc.Kind)
				}
			}
		})
	}
}

// Speaks reads in one pass what SpeaksRecords says and whether the span
// says it changed something: records.effect, the first one, is the
// string "changed" (a bool, an int or a slice never is).
func TestSpeaksIsSpeaksRecordsAndTheEffect(t *testing.T) {
	kind, changed, observed := attribute.String("records.kind", "cache"), attribute.String("records.effect", "changed"), attribute.String("records.effect", "observed")
	other := attribute.Int("n", 1)
	for _, tc := range []struct {
		attrs   []attribute.KeyValue
		changed bool
	}{
		{nil, false},
		{[]attribute.KeyValue{other}, false},
		{[]attribute.KeyValue{kind}, false},
		{[]attribute.KeyValue{kind, other, changed}, true},
		{[]attribute.KeyValue{other, changed, kind}, true},
		{[]attribute.KeyValue{observed, changed}, true},
		{[]attribute.KeyValue{changed, observed}, false},
		{[]attribute.KeyValue{changed, kind, attribute.String("records.effect", "maybe")}, false},
		{[]attribute.KeyValue{attribute.Bool("records.effect", true)}, false},
		{[]attribute.KeyValue{attribute.StringSlice("records.effect", []string{"changed"})}, false},
	} {
		speaks, got := Speaks(tc.attrs)
		if speaks != SpeaksRecords(tc.attrs) || got != tc.changed {
			t.Errorf("Speaks(%v) = %v, %v; want %v, %v", tc.attrs, speaks, got, SpeaksRecords(tc.attrs), tc.changed)
		}
		// What the record the span maps to says: the one effect of a span.
		s := tracetest.SpanStub{Name: "s", StartTime: time.Now(), EndTime: time.Now(), Attributes: tc.attrs}.Snapshot()
		if mapped := spanbridge.Map(s, sessions.LevelBasic, -1).Effect == sessions.Changed; mapped != got {
			t.Errorf("Speaks(%v) says changed %v, its record %v", tc.attrs, got, mapped)
		}
	}
}
