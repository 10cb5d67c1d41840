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
}

// maxPooled is the most spans, or attributes, a recycled slice keeps room
// for: a huge request's slices go with it.
const maxPooled = 8192

// batches converts pdata traces into the library's import batches: one per
// ResourceSpans, its scopes flattened, every value copied out of pdata
// (the request's pdata is not ours past the call). The slices are
// recycled, for Import keeps nothing of them: give them back with
// release once Import has returned.
func batches(td ptrace.Traces) *converted {
	c := importBatches.Get().(*converted)
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
			for k := range ps.Len() {
				spans = append(spans, c.span(ps.At(k), scope))
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
	if cap(c.spans) > maxPooled {
		c.spans = nil
	}
	if cap(c.batches) > maxPooled {
		c.batches = nil
	}
	if cap(c.attrs) > maxPooled {
		c.attrs = nil
	}
	c.spans, c.batches, c.attrs = c.spans[:0], c.batches[:0], c.attrs[:0]
	importBatches.Put(c)
}

// span converts one pdata span, its attributes a piece of c.attrs.
func (c *converted) span(s ptrace.Span, scope instrumentation.Scope) importer.Span {
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
			out.Events[i] = sdktrace.Event{Name: e.Name(), Time: e.Timestamp().AsTime(), Attributes: attrs(e.Attributes()),
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
				Attributes:  attrs(l.Attributes()), DroppedAttributeCount: int(l.DroppedAttributesCount()),
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
		c.attrs = append(c.attrs, attribute.KeyValue{Key: attribute.Key(k), Value: value(v)})
	}
	return c.attrs[from:len(c.attrs):len(c.attrs)]
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
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return attribute.StringValue(v.Str())
	case pcommon.ValueTypeInt:
		return attribute.Int64Value(v.Int())
	case pcommon.ValueTypeDouble:
		return attribute.Float64Value(v.Double())
	case pcommon.ValueTypeBool:
		return attribute.BoolValue(v.Bool())
	case pcommon.ValueTypeSlice:
		if sv, ok := slice(v.Slice()); ok {
			return sv
		}
	}
	return attribute.StringValue(v.AsString())
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
