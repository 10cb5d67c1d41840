package spanbridge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Mapped is an ended span as a record: where it goes and what it says.
type Mapped struct {
	// Kind is the record's kind: the span's records.kind, or
	// sessions.MarksKind for a span without one or with an invalid one.
	Kind string
	// Effect is whether the record accompanies a change.
	Effect sessions.Effect
	// Record is the body to store.
	Record sessions.Record
	// Problem, when not nil, says what was wrong with the span's control
	// attributes (an invalid kind or effect, or an effect the attribute
	// limit may have dropped: ErrAttributesDropped) and how it was
	// handled; the record is still stored. The exporter reports it
	// through otel.Handle.
	Problem error

	// attrs and inputs are the buffers MapTo reuses for Record.Attributes
	// and Record.Inputs.
	attrs  sessions.Attrs
	inputs []string
}

// ErrAttributesDropped is in a Mapped's Problem when the span dropped
// attributes at its provider's attribute limit (sdktrace.SpanLimits, 128 by
// default) and has no records.effect: a records.effect=changed set after
// the span was full was dropped with them, if there was one, and the
// session it should have kept is not kept. The SDK still updates a key a
// span already has, so a span started with Record (which sets
// records.effect=observed first) never loses its effect this way.
var ErrAttributesDropped = errors.New("span attributes dropped at the attribute limit")

// InputCount returns how many attributes s holds. A span processor calls it
// in OnStart, where s holds only what it started with (its sampler's
// attributes, those given to tracer.Start, and those set by the processors
// before it), and passes the count to Map when the span ends: those first
// attributes are its inputs, the rest its outcome. The SDK keeps a span's
// attributes in the order their keys were first set, updating a key in
// place and appending (or, at its limit, dropping) new keys, so they are
// still the first ones when the span ends.
//
// It costs what ReadOnlySpan.Attributes does: a lock, a pass that drops
// duplicate keys, and, for a span that sets attributes later, one copy of
// its attributes then.
func InputCount(s sdktrace.ReadOnlySpan) int { return len(s.Attributes()) }

// Map maps an ended span (a Go SDK span, or any Source) to a record at the given level: heavy
// (records.full.*) attributes are kept, without their prefix, only at
// sessions.LevelFull. It does not stamp; the stamp was taken when the span
// started. inputs is how many attributes the span started with, as
// InputCount said in OnStart; the record's Inputs are their keys. A
// negative inputs means it is not known: the record has no Inputs.
func Map(s Source, level sessions.Level, inputs int) Mapped {
	var m Mapped
	MapTo(&m, s, level, inputs)
	return m
}

// maxReused is the most attributes whose room MapTo keeps for the next
// span: the SDK's default attribute limit.
const maxReused = 128

// MapTo is Map into m, for a caller that maps many spans and encodes each
// record before it maps the next: it reuses the memory m's Record.Attributes
// and Record.Inputs had from an earlier call, so that mapping a span
// allocates nothing for them. Everything else in m is replaced; the
// Attributes and Inputs of the record m held before are overwritten, so
// keep neither past the next call.
func MapTo(m *Mapped, s Source, level sessions.Level, inputs int) {
	attrBuf, inputBuf := m.attrs[:0], m.inputs[:0]
	if cap(attrBuf) > maxReused || cap(inputBuf) > maxReused {
		attrBuf, inputBuf = nil, nil // a rare wide span's go with it
	}
	attrs := s.Attributes()
	var rawKind *attribute.Value
	var effect sessions.Effect
	var problem error
	hasEffect := false
	for i := range attrs {
		switch attrs[i].Key {
		case KindKey:
			rawKind = &attrs[i].Value
		case EffectKey:
			hasEffect = true
			switch v := attrs[i].Value.Emit(); v {
			case EffectChanged:
				effect = sessions.Changed
			case EffectObserved:
				effect = sessions.Observed
			default:
				effect = sessions.Observed
				problem = fmt.Errorf("otelrecords: span %q: %s=%q is neither %q nor %q; recorded as observed", s.Name(), EffectKey, cut(v, 64), EffectChanged, EffectObserved)
			}
		}
	}
	start := s.StartTime()
	sc, scope := s.SpanContext(), s.InstrumentationScope()
	// One write of the whole of m: it is large, and clearing it before
	// filling it in was a tenth of what mapping a span cost (issue 25).
	*m = Mapped{
		Kind:    sessions.MarksKind,
		Effect:  effect,
		Problem: problem,
		attrs:   attrBuf,
		inputs:  inputBuf,
		Record: sessions.Record{
			Name:         s.Name(),
			Wall:         max(s.EndTime().Sub(start), 0),
			Status:       recordStatus(s.Status()),
			TraceID:      sessions.TraceID(sc.TraceID()),
			SpanID:       sessions.SpanID(sc.SpanID()),
			ParentSpanID: sessions.SpanID(s.Parent().SpanID()),
			Scope:        sessions.Scope{Name: scope.Name, Version: scope.Version},
			TraceState:   sc.TraceState().String(),

			DroppedAttributes: s.DroppedAttributes(),
			DroppedEvents:     s.DroppedEvents(),
			DroppedLinks:      s.DroppedLinks(),
			Effect:            effect,
		},
	}
	if m.attrs = appendAttrs(m.attrs, attrs, level); len(m.attrs) > 0 {
		m.Record.Attributes = m.attrs
	}
	// Every span says its kind, "unspecified" too (an OTLP span of
	// SPAN_KIND_UNSPECIFIED; the SDK starts spans internal): a record with
	// a span kind was made from a span by a writer that stores its
	// effect, so an observed one says it is observed (FORMAT.md 3.2).
	m.Record.SpanKind = s.SpanKind().String()
	if inputs >= 0 && len(m.Record.Attributes) > 0 {
		m.inputs = appendInputKeys(m.inputs, attrs[:min(inputs, len(attrs))], level)
		// Started with none (its inputs all control attributes) is
		// an empty list, not an unknown one.
		m.Record.Inputs = m.inputs
		if m.Record.Inputs == nil {
			m.Record.Inputs = []string{}
		}
	}
	if links := s.Links(); len(links) > 0 {
		m.Record.Links = make([]sessions.Link, len(links))
		for i, l := range links {
			m.Record.Links[i] = sessions.Link{
				TraceID:    sessions.TraceID(l.SpanContext.TraceID()),
				SpanID:     sessions.SpanID(l.SpanContext.SpanID()),
				TraceState: l.SpanContext.TraceState().String(),
				Attributes: convertAttrs(l.Attributes, level),
			}
		}
	}
	if evs := s.Events(); len(evs) > 0 {
		m.Record.Events = make([]sessions.Event, len(evs))
		for i, e := range evs {
			m.Record.Events[i] = sessions.Event{
				Name:       e.Name,
				Offset:     max(e.Time.Sub(start), 0),
				Attributes: convertAttrs(e.Attributes, level),
			}
		}
	}
	if rawKind != nil {
		m.kind(s.Name(), *rawKind)
	}
	if m.Record.DroppedAttributes > 0 && !hasEffect {
		m.Problem = errors.Join(m.Problem, fmt.Errorf("otelrecords: span %q: %w (%d dropped); %s may have been lost: start the span with spanbridge.Record(...), which sets it first, or raise the limit (sdktrace.WithSpanLimits, OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT)",
			s.Name(), ErrAttributesDropped, m.Record.DroppedAttributes, EffectKey))
	}
}

// appendInputKeys appends to dst the keys the attributes a span started with are stored
// under: without control attributes, and without heavy ones below level
// full (which are not stored), in the order the span was given them.
func appendInputKeys(keys []string, started []attribute.KeyValue, level sessions.Level) []string {
	for _, kv := range AtLevel(started, level) {
		if isControl(kv.Key) {
			continue
		}
		k, _ := strings.CutPrefix(string(kv.Key), FullPrefix)
		keys = append(keys, k)
	}
	return keys
}

// kind sets the record's kind from the span's records.kind value, or keeps
// it a mark carrying the value it gave, with a Problem saying why.
func (m *Mapped) kind(span string, v attribute.Value) {
	var err error
	if v.Type() != attribute.STRING {
		err = fmt.Errorf("%w: %s is a %s, not a string", sessions.ErrInvalidKind, KindKey, v.Type())
	} else if m.Kind, err = keys.CheckKind(v.AsString()); err == nil {
		return
	}
	m.Kind = sessions.MarksKind
	m.Record.Attributes = append(m.Record.Attributes, sessions.Attr{Key: string(InvalidKindKey), Value: sessions.StringValue(cut(v.Emit(), 256))})
	m.Problem = fmt.Errorf("otelrecords: span %q: %w; recorded as a mark with %s", span, err, InvalidKindKey)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// convertAttrs converts span attributes to record attributes: control
// attributes are dropped, and heavy ones kept, without their prefix, only
// at sessions.LevelFull. It returns nil when none is left.
func convertAttrs(kvs []attribute.KeyValue, level sessions.Level) sessions.Attrs {
	out := appendAttrs(nil, kvs, level)
	if len(out) == 0 {
		return nil
	}
	return out
}

// appendAttrs appends the record attributes of kvs (as convertAttrs
// converts them) to dst.
func appendAttrs(dst sessions.Attrs, kvs []attribute.KeyValue, level sessions.Level) sessions.Attrs {
	kvs = AtLevel(kvs, level)
	dst = slices.Grow(dst, len(kvs))
	for _, kv := range kvs {
		if isControl(kv.Key) {
			continue
		}
		k, _ := strings.CutPrefix(string(kv.Key), FullPrefix)
		dst = append(dst, sessions.Attr{Key: k, Value: Value(kv.Value)})
	}
	return dst
}
