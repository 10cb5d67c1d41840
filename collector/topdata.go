package collector

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The reverse of convert.go: spans of the SDK's shape (a record made a
// span again by spanbridge.Span) into pdata, for the processor to hand
// down its pipeline.

// putResource fills r with the attributes of res.
func putResource(r pcommon.Resource, res *resource.Resource) {
	putAttrs(r.Attributes(), res.Attributes())
}

// appendRecord appends the span spanbridge.Span makes of rec, a record
// of kind, to ss: the same span as appendSpan of it, built straight from
// the record, since the processor hands on every record of every kept
// session and a ReadOnlySpan in between doubled what that cost. A record
// with links (rare) goes the long way, so that their trace states are
// read as Span reads them.
//
// extra is scratch space for the attributes spanbridge.Fields adds, which
// the caller reuses; appendRecord returns it.
func appendRecord(ss ptrace.SpanSlice, kind string, rec *sessions.Stamped[sessions.Record], extra []attribute.KeyValue) []attribute.KeyValue {
	b := &rec.Record
	if len(b.Links) > 0 {
		appendSpan(ss, spanbridge.Span(nil, kind, *rec))
		return extra
	}
	f := spanbridge.Fields(extra[:0], kind, *rec)
	out := ss.AppendEmpty()
	out.SetTraceID(pcommon.TraceID(f.TraceID))
	out.SetSpanID(pcommon.SpanID(f.SpanID))
	if ts := f.TraceState.String(); ts != "" {
		out.TraceState().FromRaw(ts)
	}
	if f.Parent.IsValid() {
		out.SetParentSpanID(pcommon.SpanID(f.Parent))
		out.SetFlags(flagHasIsRemote) // a record's parent is never remote
	}
	out.SetName(b.Name)
	out.SetKind(ptrace.SpanKind(f.Kind))
	out.SetStartTimestamp(pcommon.NewTimestampFromTime(f.Start))
	out.SetEndTimestamp(pcommon.NewTimestampFromTime(f.End))
	m := out.Attributes()
	m.EnsureCapacity(len(b.Attributes) + len(f.Extra))
	putRecordAttrs(m, b.Attributes)
	putAttrs(m, f.Extra)
	out.SetDroppedAttributesCount(uint32(b.DroppedAttributes))
	for _, e := range b.Events {
		oe := out.Events().AppendEmpty()
		oe.SetName(e.Name)
		oe.SetTimestamp(pcommon.NewTimestampFromTime(f.Start.Add(e.Offset)))
		putRecordAttrs(oe.Attributes(), e.Attributes)
	}
	out.SetDroppedEventsCount(uint32(b.DroppedEvents))
	out.SetDroppedLinksCount(uint32(b.DroppedLinks))
	switch f.Status.Code {
	case codes.Error:
		out.Status().SetCode(ptrace.StatusCodeError)
		out.Status().SetMessage(f.Status.Description)
	case codes.Ok:
		out.Status().SetCode(ptrace.StatusCodeOk)
	}
	return f.Extra
}

// appendTally appends the span of a part of a tally (spanbridge.TallySpan)
// to ss, from its fields.
func appendTally(ss ptrace.SpanSlice, f spanbridge.TallySpanFields) {
	out := ss.AppendEmpty()
	out.SetTraceID(pcommon.TraceID(f.TraceID))
	out.SetSpanID(pcommon.SpanID(f.SpanID))
	out.SetName(spanbridge.TallyName)
	out.SetKind(ptrace.SpanKindInternal)
	out.SetStartTimestamp(pcommon.NewTimestampFromTime(f.Start))
	out.SetEndTimestamp(pcommon.NewTimestampFromTime(f.End))
	putAttrs(out.Attributes(), f.Attributes)
}

// putRecordAttrs puts a record's attributes into m, each of its type, as
// putAttrs puts them once spanbridge.Attributes made them OpenTelemetry's.
func putRecordAttrs(m pcommon.Map, attrs sessions.Attrs) {
	m.EnsureCapacity(m.Len() + len(attrs))
	for _, kv := range attrs {
		switch v := kv.Value.Any().(type) {
		case bool:
			m.PutBool(kv.Key, v)
		case int64:
			m.PutInt(kv.Key, v)
		case float64:
			m.PutDouble(kv.Key, v)
		case string:
			m.PutStr(kv.Key, v)
		case []bool:
			putSlice(m, kv.Key, v, pcommon.Value.SetBool)
		case []int64:
			putSlice(m, kv.Key, v, pcommon.Value.SetInt)
		case []float64:
			putSlice(m, kv.Key, v, pcommon.Value.SetDouble)
		case []string:
			putSlice(m, kv.Key, v, pcommon.Value.SetStr)
		default: // the empty value: attribute.Value{}, which putAttrs emits
			m.PutStr(kv.Key, "")
		}
	}
}

// putSlice puts xs into m under key as a slice value, each set by set.
func putSlice[T any](m pcommon.Map, key string, xs []T, set func(pcommon.Value, T)) {
	s := m.PutEmptySlice(key)
	s.EnsureCapacity(len(xs))
	for _, x := range xs {
		set(s.AppendEmpty(), x)
	}
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
