package collector

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer"
)

// The OTLP span flags that say whether the parent is remote (OTLP's
// SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK and _IS_REMOTE_MASK).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// importBatches recycles the slices batches makes: Import keeps nothing
// of what it is given (a span it holds is a copy), so a request's slices
// are free once Import returns (release), and the next request's
// conversion reuses them rather than allocating a thousand spans' worth,
// and their attributes', again.
var importBatches = sync.Pool{New: func() any { return new(converted) }}

// converted is one request's batches, and the slices under them: its
// spans, and their attributes, each span's a piece of one slice.
type converted struct {
	batches []importer.Batch
	spans   []importer.Span
	attrs   []attribute.KeyValue
	// For the records processor (batchesOf): the request's id among those
	// in flight, its spans as they came by origin (Span.Origin less one),
	// and the records noted as spans of it as they came (origins.note).
	id      uint64
	origins []origin
	sources []source
	noted   []stamp
	// lossy says the span being converted has a value the API has no type
	// for, whose record holds its JSON text: it cannot go on as it came.
	lossy bool
}

// maxPooled is the most spans, or attributes, a recycled slice keeps room
// for: a huge request's slices go with it.
const maxPooled = 8192

// batches converts pdata traces into the library's import batches: one per
// ResourceSpans, its scopes flattened, every value copied out of pdata
// (the request's pdata is not ours past the call). The slices are
// recycled, for Import keeps nothing of them: give them back with
// release once Import has returned.
func batches(td ptrace.Traces) *converted { return batchesOf(td, 0) }

// batchesOf is batches for request id of the records processor (0: none):
// each span that can go on as it came (sameSpan) is given an Origin, its
// place in c.origins plus one, with the request's id above originBits.
func batchesOf(td ptrace.Traces, id uint64) *converted {
	c := importBatches.Get().(*converted)
	c.id = id
	rss := td.ResourceSpans()
	total, kvs := 0, 0
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			ps := sss.At(j).Spans()
			total += ps.Len()
			for k := range ps.Len() {
				kvs += ps.At(k).Attributes().Len()
			}
		}
	}
	if cap(c.spans) < total {
		c.spans = make([]importer.Span, 0, total)
	}
	if cap(c.attrs) < kvs {
		c.attrs = make([]attribute.KeyValue, 0, kvs)
	}
	spans := c.spans[:0]
	c.attrs = c.attrs[:0]
	out := c.batches[:0]
	for i := range rss.Len() {
		rs := rss.At(i)
		b := importer.Batch{Resource: attrs(rs.Resource().Attributes())}
		sss := rs.ScopeSpans()
		from := len(spans)
		for j := range sss.Len() {
			ss := sss.At(j)
			scope := instrumentation.Scope{Name: ss.Scope().Name(), Version: ss.Scope().Version(), SchemaURL: ss.SchemaUrl()}
			ps := ss.Spans()
			if id != 0 {
				c.sources = append(c.sources, source{spans: ps})
			}
			for k := range ps.Len() {
				spans = append(spans, c.span(ps.At(k), scope))
				if id != 0 && !c.lossy && len(c.origins) < maxOrigins {
					c.origins = append(c.origins, origin{span: ps.At(k), scope: scope, source: len(c.sources) - 1})
					spans[len(spans)-1].Origin = id<<originBits | uint64(len(c.origins))
				}
			}
		}
		b.Spans = spans[from:len(spans):len(spans)]
		out = append(out, b)
	}
	c.batches, c.spans = out, spans
	return c
}

// release gives c's slices back for another request, emptied so that
// they hold on to nothing of this one.
func (c *converted) release() {
	clear(c.spans[:cap(c.spans)])
	clear(c.batches[:cap(c.batches)])
	clear(c.attrs[:cap(c.attrs)])
	clear(c.origins[:cap(c.origins)])
	clear(c.sources[:cap(c.sources)])
	c.origins, c.sources, c.noted, c.id = c.origins[:0], c.sources[:0], c.noted[:0], 0
	if cap(c.spans) > maxPooled {
		c.spans = nil
	}
	if cap(c.batches) > maxPooled {
		c.batches = nil
	}
	if cap(c.attrs) > maxPooled {
		c.attrs = nil
	}
	if cap(c.origins) > maxPooled || cap(c.sources) > maxPooled {
		c.origins, c.sources, c.noted = nil, nil, nil
	}
	c.spans, c.batches, c.attrs = c.spans[:0], c.batches[:0], c.attrs[:0]
	importBatches.Put(c)
}

// span converts one pdata span, its attributes a piece of c.attrs.
func (c *converted) span(s ptrace.Span, scope instrumentation.Scope) importer.Span {
	c.lossy = false
	out := importer.Span{
		TraceID:           trace.TraceID(s.TraceID()),
		SpanID:            trace.SpanID(s.SpanID()),
		ParentSpanID:      trace.SpanID(s.ParentSpanID()),
		ParentRemote:      s.Flags()&flagHasIsRemote != 0 && s.Flags()&flagIsRemote != 0,
		TraceState:        s.TraceState().AsRaw(),
		Name:              s.Name(),
		Kind:              trace.SpanKind(s.Kind()), // OTLP and the API number kinds alike
		Start:             s.StartTimestamp().AsTime(),
		End:               s.EndTimestamp().AsTime(),
		Attributes:        c.attrsOf(s.Attributes()),
		Status:            status(s.Status()),
		Scope:             scope,
		DroppedAttributes: int(s.DroppedAttributesCount()),
		DroppedEvents:     int(s.DroppedEventsCount()),
		DroppedLinks:      int(s.DroppedLinksCount()),
	}
	if evs := s.Events(); evs.Len() > 0 {
		out.Events = make([]sdktrace.Event, evs.Len())
		for i := range evs.Len() {
			e := evs.At(i)
			out.Events[i] = sdktrace.Event{Name: e.Name(), Time: e.Timestamp().AsTime(), Attributes: c.attrsNoted(e.Attributes()),
				DroppedAttributeCount: int(e.DroppedAttributesCount())}
		}
	}
	if ls := s.Links(); ls.Len() > 0 {
		out.Links = make([]sdktrace.Link, ls.Len())
		for i := range ls.Len() {
			l := ls.At(i)
			ts, _ := trace.ParseTraceState(l.TraceState().AsRaw())
			out.Links[i] = sdktrace.Link{
				SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID(l.TraceID()), SpanID: trace.SpanID(l.SpanID()), TraceState: ts}),
				Attributes:  c.attrsNoted(l.Attributes()), DroppedAttributeCount: int(l.DroppedAttributesCount()),
			}
		}
	}
	return out
}

// status converts a span status: OTLP numbers its codes unlike the API.
func status(st ptrace.Status) sdktrace.Status {
	switch st.Code() {
	case ptrace.StatusCodeError:
		return sdktrace.Status{Code: codes.Error, Description: st.Message()}
	case ptrace.StatusCodeOk:
		return sdktrace.Status{Code: codes.Ok}
	}
	return sdktrace.Status{Code: codes.Unset}
}

// attrsOf is attrs into c.attrs: the span's piece of it, or nil when it
// has none.
func (c *converted) attrsOf(m pcommon.Map) []attribute.KeyValue {
	if m.Len() == 0 {
		return nil
	}
	from := len(c.attrs)
	for k, v := range m.All() {
		av, exact := valueOf(v)
		c.lossy = c.lossy || !exact
		c.attrs = append(c.attrs, attribute.KeyValue{Key: attribute.Key(k), Value: av})
	}
	return c.attrs[from:len(c.attrs):len(c.attrs)]
}

// attrsNoted is attrs, noting a value the API has no type for (lossy).
func (c *converted) attrsNoted(m pcommon.Map) []attribute.KeyValue {
	for _, v := range m.All() {
		c.lossy = c.lossy || !exact(v)
	}
	return attrs(m)
}

// exact reports whether value gives v as the API has it, a value of its
// type rather than its JSON text.
func exact(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeStr, pcommon.ValueTypeInt, pcommon.ValueTypeDouble, pcommon.ValueTypeBool:
		return true
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		for i := 1; i < s.Len(); i++ {
			if s.At(i).Type() != s.At(0).Type() {
				return false
			}
		}
		if s.Len() > 0 {
			switch s.At(0).Type() {
			case pcommon.ValueTypeStr, pcommon.ValueTypeInt, pcommon.ValueTypeDouble, pcommon.ValueTypeBool:
			default:
				return false
			}
		}
		return true
	}
	return false
}

// attrs converts OTLP attributes. OTLP carries values the API does not
// (maps, byte strings, arrays of mixed types): those become their JSON
// text, as pdata writes it, so nothing a sender said is lost.
func attrs(m pcommon.Map) []attribute.KeyValue {
	if m.Len() == 0 {
		return nil
	}
	out := make([]attribute.KeyValue, 0, m.Len())
	for k, v := range m.All() {
		out = append(out, attribute.KeyValue{Key: attribute.Key(k), Value: value(v)})
	}
	return out
}

// value converts one OTLP value.
func value(v pcommon.Value) attribute.Value {
	av, _ := valueOf(v)
	return av
}

// valueOf converts one OTLP value, and reports whether it is exact (as
// exact says): a value of the API's type rather than its JSON text.
func valueOf(v pcommon.Value) (attribute.Value, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return attribute.StringValue(v.Str()), true
	case pcommon.ValueTypeInt:
		return attribute.Int64Value(v.Int()), true
	case pcommon.ValueTypeDouble:
		return attribute.Float64Value(v.Double()), true
	case pcommon.ValueTypeBool:
		return attribute.BoolValue(v.Bool()), true
	case pcommon.ValueTypeSlice:
		if sv, ok := slice(v.Slice()); ok {
			return sv, true
		}
	}
	return attribute.StringValue(v.AsString()), false
}

// slice converts an OTLP array whose elements share one of the API's
// types; false for any other.
func slice(s pcommon.Slice) (attribute.Value, bool) {
	if s.Len() == 0 {
		return attribute.StringSliceValue(nil), true
	}
	switch s.At(0).Type() {
	case pcommon.ValueTypeStr:
		return homogeneous(s, pcommon.ValueTypeStr, pcommon.Value.Str, attribute.StringSliceValue)
	case pcommon.ValueTypeInt:
		return homogeneous(s, pcommon.ValueTypeInt, pcommon.Value.Int, attribute.Int64SliceValue)
	case pcommon.ValueTypeDouble:
		return homogeneous(s, pcommon.ValueTypeDouble, pcommon.Value.Double, attribute.Float64SliceValue)
	case pcommon.ValueTypeBool:
		return homogeneous(s, pcommon.ValueTypeBool, pcommon.Value.Bool, attribute.BoolSliceValue)
	}
	return attribute.Value{}, false
}

func homogeneous[T any](s pcommon.Slice, typ pcommon.ValueType, get func(pcommon.Value) T, wrap func([]T) attribute.Value) (attribute.Value, bool) {
	out := make([]T, s.Len())
	for i := range s.Len() {
		if s.At(i).Type() != typ {
			return attribute.Value{}, false
		}
		out[i] = get(s.At(i))
	}
	return wrap(out), true
}
