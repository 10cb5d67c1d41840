package intake

import (
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/trace"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/tally"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The bounds of a plain span (appendPlain): well inside every limit a
// record has (keys.MaxRecordSize, cborwire.MaxMapPairs, what a reader
// decodes), so that a record within them never needs the checks of
// recorder.AppendEncoded.
const (
	plainAttrs  = 16   // attributes, control ones included
	plainString = 1024 // bytes of any one string: a name, a key, a value
)

// Plain reports whether s is a plain span, whose record EncodeRecord
// encodes straight from the span (appendPlain), and returns its kind and
// effect: a record within every limit, with nothing cut and nothing
// wrong with its control attributes. ok is false for any span that is
// not plain: one with links or events, dropped attributes, events or
// links, a status other than unset, a start outside what an id holds,
// heavy attributes, attribute values other than a bool, an int64, a
// float64 or a string, more than plainAttrs attributes, a string longer
// than plainString, or a records.kind or records.effect that is not
// valid. The Importer of the Collector's records processor queues such a
// span's record without its value while the span itself goes on
// (importer.Config.AsReceived), for the value is the span's alone.
func Plain(s spanbridge.Source) (kind string, effect sessions.Effect, ok bool) {
	p, ok := plainOf(s)
	return p.kind, p.effect, ok
}

// plain is what plainOf read of a plain span, so that appendPlain asks
// the span (an SDK span's accessors copy) for each once.
type plain struct {
	kind       string
	effect     sessions.Effect
	start      time.Time
	attrs      []attribute.KeyValue
	name       string
	scope      instrumentation.Scope
	sc         trace.SpanContext
	traceState string
}

// plainOf is Plain, with what it read of s.
func plainOf(s spanbridge.Source) (p plain, ok bool) {
	if len(s.Links()) > 0 || len(s.Events()) > 0 ||
		s.DroppedAttributes() != 0 || s.DroppedEvents() != 0 || s.DroppedLinks() != 0 ||
		s.Status().Code != codes.Unset {
		return plain{}, false
	}
	start := s.StartTime()
	if !recorder.Sane(start) {
		return plain{}, false
	}
	attrs := s.Attributes()
	if len(attrs) > plainAttrs {
		return plain{}, false
	}
	kind, effect := sessions.MarksKind, sessions.Observed
	for i := range attrs {
		kv := &attrs[i]
		if len(kv.Key) > plainString || strings.HasPrefix(string(kv.Key), spanbridge.FullPrefix) {
			return plain{}, false
		}
		switch kv.Key {
		case spanbridge.KindKey:
			if kv.Value.Type() != attribute.STRING {
				return plain{}, false
			}
			k, err := keys.CheckKind(kv.Value.AsString())
			if err != nil {
				return plain{}, false
			}
			kind = k
			continue
		case spanbridge.EffectKey:
			switch kv.Value.Emit() {
			case spanbridge.EffectChanged:
				effect = sessions.Changed
			case spanbridge.EffectObserved:
				effect = sessions.Observed
			default:
				return plain{}, false
			}
			continue
		}
		switch kv.Value.Type() {
		case attribute.BOOL, attribute.INT64, attribute.FLOAT64:
		case attribute.STRING:
			if len(kv.Value.AsString()) > plainString {
				return plain{}, false
			}
		default:
			return plain{}, false
		}
	}
	name, scope, sc := s.Name(), s.InstrumentationScope(), s.SpanContext()
	traceState := sc.TraceState().String()
	if len(name) > plainString || len(scope.Name) > plainString || len(scope.Version) > plainString ||
		len(traceState) > plainString {
		return plain{}, false
	}
	return plain{kind, effect, start, attrs, name, scope, sc, traceState}, true
}

// appendPlain appends the value of the record of the ended span s,
// stamped st, to dst, straight from the span — the bytes EncodeRecord
// would append, without the record in between and its boxed attribute
// values — and returns the record's kind and effect. ok is false, and dst
// is returned as it was, for any span that is not Plain. Those go the
// general way (EncodeRecord). The Encoded it returns has the record's
// kind and effect, and a Hint of where its name, attributes and wall_ns
// start, for a tally to read them in place should the record be let go.
func appendPlain(dst []byte, s spanbridge.Source, inputs int, st sessions.Stamp) (out []byte, enc Encoded, ok bool) {
	p, ok := plainOf(s)
	if !ok {
		return dst, Encoded{}, false
	}
	kind, effect := p.kind, p.effect
	base := len(dst)
	var hint tally.Hint
	start, attrs, name, scope, sc, traceState := p.start, p.attrs, p.name, p.scope, p.sc, p.traceState
	parent := s.Parent().SpanID()
	spanKind := s.SpanKind().String() // "unspecified" too, as spanbridge.MapTo
	traceID, spanID := sc.TraceID(), sc.SpanID()
	hasScope := scope.Name != "" || scope.Version != ""
	// The attribute map's keys in encoded order, a later duplicate winning
	// (a span from the SDK has none; an imported one might).
	var stack [plainAttrs]int
	order := cw.SortKeys(stack[:0], len(attrs), func(i int) string { return string(attrs[i].Key) })
	mapped := 0
	for _, i := range order {
		if k := attrs[i].Key; k != spanbridge.KindKey && k != spanbridge.EffectKey {
			mapped++
		}
	}
	// The record has attributes, and so inputs, when any but the control
	// ones is left.
	hasInputs := inputs >= 0 && mapped > 0

	// sessions.appendRecord's layout, to the byte (TestPlainEncodingIsTheRecords).
	dst = append(dst, 0xa2) // {stamp, record}
	dst = cw.AppendText(dst, cw.KeyStamp)
	dst = append(dst, 0xa3)
	dst = cw.AppendUint(cw.AppendText(dst, cw.KeySeq), st.Seq)
	dst = cw.AppendUint(cw.AppendText(dst, cw.KeySession), uint64(st.Session))
	dst = cw.AppendInt(cw.AppendText(dst, cw.KeyOffset), int64(st.Offset))
	dst = cw.AppendText(dst, cw.KeyRecord)
	dst = cw.AppendMapHead(dst, 2+there(mapped > 0)+there(hasScope)+there(effect != sessions.Observed)+
		there(hasInputs)+there(spanID.IsValid())+there(traceID.IsValid())+there(spanKind != "")+
		there(traceState != "")+there(parent.IsValid()))
	dst = cw.AppendText(dst, cw.KeyName)
	hint.Name = uint32(len(dst) - base)
	dst = cw.AppendText(dst, name)
	if mapped > 0 {
		dst = cw.AppendText(dst, cw.KeyAttrs)
		hint.Attrs = uint32(len(dst) - base)
		dst = cw.AppendMapHead(dst, mapped)
		for _, i := range order {
			kv := &attrs[i]
			if kv.Key == spanbridge.KindKey || kv.Key == spanbridge.EffectKey {
				continue
			}
			dst = cw.AppendText(dst, string(kv.Key))
			switch kv.Value.Type() {
			case attribute.BOOL:
				dst = cw.AppendBool(dst, kv.Value.AsBool())
			case attribute.INT64:
				dst = cw.AppendInt(dst, kv.Value.AsInt64())
			case attribute.FLOAT64:
				dst = cw.AppendFloat(dst, kv.Value.AsFloat64())
			default:
				dst = cw.AppendText(dst, kv.Value.AsString())
			}
		}
	}
	if hasScope {
		dst = cw.AppendText(dst, cw.KeyScope)
		dst = cw.AppendMapHead(dst, there(scope.Name != "")+there(scope.Version != ""))
		if scope.Name != "" {
			dst = cw.AppendText(cw.AppendText(dst, cw.KeyName), scope.Name)
		}
		if scope.Version != "" {
			dst = cw.AppendText(cw.AppendText(dst, cw.KeyVersion), scope.Version)
		}
	}
	if effect != sessions.Observed {
		dst = cw.AppendText(cw.AppendText(dst, cw.KeyEffect), effect.String())
	}
	if hasInputs {
		n := 0
		for i := range attrs[:min(inputs, len(attrs))] {
			if k := attrs[i].Key; k != spanbridge.KindKey && k != spanbridge.EffectKey {
				n++
			}
		}
		dst = cw.AppendArrayHead(cw.AppendText(dst, cw.KeyInputs), n)
		for i := range attrs[:min(inputs, len(attrs))] {
			if k := attrs[i].Key; k != spanbridge.KindKey && k != spanbridge.EffectKey {
				dst = cw.AppendText(dst, string(k))
			}
		}
	}
	if spanID.IsValid() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeySpanID), spanID[:])
	}
	dst = cw.AppendText(dst, cw.KeyWall)
	hint.Wall = uint32(len(dst) - base)
	dst = cw.AppendInt(dst, int64(max(s.EndTime().Sub(start), time.Duration(0))))
	if traceID.IsValid() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeyTraceID), traceID[:])
	}
	if spanKind != "" {
		dst = cw.AppendText(cw.AppendText(dst, cw.KeySpanKind), spanKind)
	}
	if traceState != "" {
		dst = cw.AppendText(cw.AppendText(dst, cw.KeyTraceState), traceState)
	}
	if parent.IsValid() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeyParentSpanID), parent[:])
	}
	return dst, Encoded{Kind: kind, Effect: effect, Hint: hint}, true
}

// there is 1 for a key that is there, 0 for one left out.
func there(ok bool) int {
	if ok {
		return 1
	}
	return 0
}
