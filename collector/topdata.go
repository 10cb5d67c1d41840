package collector

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The reverse of convert.go: spans of the SDK's shape (a record made a
// span again by spanbridge.Span) into pdata, for the processor to hand
// down its pipeline.

// putResource fills r with the attributes of res.
func putResource(r pcommon.Resource, res *resource.Resource) {
	putAttrs(r.Attributes(), res.Attributes())
}

// appendSpan appends s to ss.
func appendSpan(ss ptrace.SpanSlice, s sdktrace.ReadOnlySpan) {
	out := ss.AppendEmpty()
	sc := s.SpanContext()
	out.SetTraceID(pcommon.TraceID(sc.TraceID()))
	out.SetSpanID(pcommon.SpanID(sc.SpanID()))
	out.TraceState().FromRaw(sc.TraceState().String())
	if p := s.Parent(); p.IsValid() {
		out.SetParentSpanID(pcommon.SpanID(p.SpanID()))
		flags := uint32(flagHasIsRemote)
		if p.IsRemote() {
			flags |= flagIsRemote
		}
		out.SetFlags(flags)
	}
	out.SetName(s.Name())
	out.SetKind(ptrace.SpanKind(s.SpanKind())) // OTLP and the API number kinds alike
	out.SetStartTimestamp(pcommon.NewTimestampFromTime(s.StartTime()))
	out.SetEndTimestamp(pcommon.NewTimestampFromTime(s.EndTime()))
	putAttrs(out.Attributes(), s.Attributes())
	out.SetDroppedAttributesCount(uint32(s.DroppedAttributes()))
	for _, e := range s.Events() {
		oe := out.Events().AppendEmpty()
		oe.SetName(e.Name)
		oe.SetTimestamp(pcommon.NewTimestampFromTime(e.Time))
		putAttrs(oe.Attributes(), e.Attributes)
		oe.SetDroppedAttributesCount(uint32(e.DroppedAttributeCount))
	}
	out.SetDroppedEventsCount(uint32(s.DroppedEvents()))
	for _, l := range s.Links() {
		ol := out.Links().AppendEmpty()
		ol.SetTraceID(pcommon.TraceID(l.SpanContext.TraceID()))
		ol.SetSpanID(pcommon.SpanID(l.SpanContext.SpanID()))
		ol.TraceState().FromRaw(l.SpanContext.TraceState().String())
		putAttrs(ol.Attributes(), l.Attributes)
		ol.SetDroppedAttributesCount(uint32(l.DroppedAttributeCount))
	}
	out.SetDroppedLinksCount(uint32(s.DroppedLinks()))
	switch st := s.Status(); st.Code {
	case codes.Error:
		out.Status().SetCode(ptrace.StatusCodeError)
		out.Status().SetMessage(st.Description)
	case codes.Ok:
		out.Status().SetCode(ptrace.StatusCodeOk)
	}
}

// putAttrs puts kvs into m, each of its type.
func putAttrs(m pcommon.Map, kvs []attribute.KeyValue) {
	m.EnsureCapacity(len(kvs))
	for _, kv := range kvs {
		k := string(kv.Key)
		switch v := kv.Value; v.Type() {
		case attribute.BOOL:
			m.PutBool(k, v.AsBool())
		case attribute.INT64:
			m.PutInt(k, v.AsInt64())
		case attribute.FLOAT64:
			m.PutDouble(k, v.AsFloat64())
		case attribute.STRING:
			m.PutStr(k, v.AsString())
		case attribute.BOOLSLICE:
			s := m.PutEmptySlice(k)
			for _, b := range v.AsBoolSlice() {
				s.AppendEmpty().SetBool(b)
			}
		case attribute.INT64SLICE:
			s := m.PutEmptySlice(k)
			for _, n := range v.AsInt64Slice() {
				s.AppendEmpty().SetInt(n)
			}
		case attribute.FLOAT64SLICE:
			s := m.PutEmptySlice(k)
			for _, f := range v.AsFloat64Slice() {
				s.AppendEmpty().SetDouble(f)
			}
		case attribute.STRINGSLICE:
			s := m.PutEmptySlice(k)
			for _, x := range v.AsStringSlice() {
				s.AppendEmpty().SetStr(x)
			}
		default:
			m.PutStr(k, v.Emit())
		}
	}
}
