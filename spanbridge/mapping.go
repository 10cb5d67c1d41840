package spanbridge

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/keys"
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
	// attributes (an invalid kind or effect) and how it was handled; the
	// record is still stored. The exporter reports it through otel.Handle.
	Problem error
}

// Map maps an ended span to a record at the given level: heavy
// (records.full.*) attributes are kept, without their prefix, only at
// sessions.LevelFull. It does not stamp; the stamp was taken when the span
// started.
func Map(s sdktrace.ReadOnlySpan, level sessions.Level) Mapped {
	m := Mapped{Kind: sessions.MarksKind}
	attrs := s.Attributes()
	var rawKind *attribute.Value
	for i := range attrs {
		switch attrs[i].Key {
		case KindKey:
			rawKind = &attrs[i].Value
		case EffectKey:
			switch v := attrs[i].Value.Emit(); v {
			case EffectChanged:
				m.Effect = sessions.Changed
			case EffectObserved:
				m.Effect = sessions.Observed
			default:
				m.Effect = sessions.Observed
				m.Problem = fmt.Errorf("otelrecords: span %q: %s=%q is neither %q nor %q; recorded as observed", s.Name(), EffectKey, cut(v, 64), EffectChanged, EffectObserved)
			}
		}
	}
	start := s.StartTime()
	m.Record = sessions.Record{
		Name:         s.Name(),
		Wall:         max(s.EndTime().Sub(start), 0),
		Attributes:   convertAttrs(attrs, level),
		Status:       recordStatus(s.Status()),
		TraceID:      sessions.TraceID(s.SpanContext().TraceID()),
		SpanID:       sessions.SpanID(s.SpanContext().SpanID()),
		ParentSpanID: sessions.SpanID(s.Parent().SpanID()),
		Scope:        sessions.Scope{Name: s.InstrumentationScope().Name, Version: s.InstrumentationScope().Version},
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
	return m
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
// attributes go, heavy ones stay (unprefixed) only at level full.
func convertAttrs(kvs []attribute.KeyValue, level sessions.Level) sessions.Attrs {
	kvs = AtLevel(kvs, level)
	n := 0
	for _, kv := range kvs {
		if !isControl(kv.Key) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make(sessions.Attrs, 0, n)
	for _, kv := range kvs {
		if isControl(kv.Key) {
			continue
		}
		k, _ := strings.CutPrefix(string(kv.Key), FullPrefix)
		out = append(out, sessions.Attr{Key: k, Value: Value(kv.Value)})
	}
	return out
}
