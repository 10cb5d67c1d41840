package spanbridge

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// ErrNotRecord is matched by the error FromSpan and FromResource return
// for a span or a Resource that does not carry what makes it a record
// again: a span without records.kind or records.seq, a Resource without
// records.session.id. A backend holds such spans beside records (the
// program's own spans, other services'): a reader steps over them.
var ErrNotRecord = errors.New("otelrecords: not a record")

// The values of DerivedIDsKey.
const (
	derivedTraceID = "trace_id"
	derivedSpanID  = "span_id"
)

// FromSpan returns the record a span was, when Span made the span: the
// inverse of Span. session is the id of the session whose Resource the
// span came under (FromResource). The record's kind is the span's
// records.kind; its stamp's seq is records.seq, and its offset the span's
// start less the session's start (its id, in Unix nanoseconds). Its body
// is what Map makes of the span at level full, as the exporter would have
// recorded it, less the attributes Span added (records.seq,
// records.inputs, records.span_kind, records.derived_ids), which give the
// body's Inputs, its span kind where the span's cannot say it, and ids
// Span made up from the stamp (zero again).
//
// A span without records.kind or records.seq, or with a kind no store
// holds, gives an error matching ErrNotRecord.
func FromSpan(session sessions.SessionID, s Source) (string, sessions.Stamped[sessions.Record], error) {
	var kind, seq, inputs, spanKind, derived attribute.Value
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case KindKey:
			kind = kv.Value
		case SeqKey:
			seq = kv.Value
		case InputsKey:
			inputs = kv.Value
		case SpanKindKey:
			spanKind = kv.Value
		case DerivedIDsKey:
			derived = kv.Value
		}
	}
	var none sessions.Stamped[sessions.Record]
	if kind.Type() != attribute.STRING || seq.Type() != attribute.INT64 {
		return "", none, fmt.Errorf("%w: span %q has no %s and %s", ErrNotRecord, s.Name(), KindKey, SeqKey)
	}
	k, err := keys.CheckKind(kind.AsString())
	if err != nil || k != kind.AsString() {
		return "", none, fmt.Errorf("%w: span %q: %s %q is no kind a store holds", ErrNotRecord, s.Name(), KindKey, kind.AsString())
	}

	m := Map(s, sessions.LevelFull, -1)
	rec := m.Record
	// Map leaves out records.kind and records.effect; the others Span
	// added are among the attributes.
	rec.Attributes = slices.DeleteFunc(rec.Attributes, func(a sessions.Attr) bool { return isAdded(attribute.Key(a.Key)) })
	if len(rec.Attributes) == 0 {
		rec.Attributes = nil
	}
	if inputs.Type() == attribute.STRINGSLICE {
		rec.Inputs = inputs.AsStringSlice()
		if rec.Inputs == nil {
			rec.Inputs = []string{}
		}
	}
	if spanKind.Type() == attribute.STRING {
		rec.SpanKind = spanKind.AsString()
	}
	if derived.Type() == attribute.STRINGSLICE {
		ids := derived.AsStringSlice()
		if slices.Contains(ids, derivedTraceID) {
			rec.TraceID = sessions.TraceID{}
		}
		if slices.Contains(ids, derivedSpanID) {
			rec.SpanID = sessions.SpanID{}
		}
	}
	return k, sessions.Stamped[sessions.Record]{
		Stamp: sessions.Stamp{
			Session: session,
			Seq:     uint64(seq.AsInt64()),
			Offset:  s.StartTime().Sub(sessions.Session{ID: session}.Started()),
		},
		Record: rec,
	}, nil
}

// isAdded reports whether a span attribute is one Span adds to a record's
// own, besides the control attributes Map leaves out.
func isAdded(k attribute.Key) bool {
	switch k {
	case SeqKey, InputsKey, SpanKindKey, DerivedIDsKey:
		return true
	}
	return false
}

// FromResource returns the session a Resource's attributes describe, when
// Resource or OrphanResource made it: the inverse of both. row is true
// when the Resource carries the session's row (Resource), which then comes
// back as the store held it; false for the Resource of records whose row
// is gone (OrphanResource), of which only the id is known.
//
// A Resource without records.session.id, or with one that is not a
// session id, gives an error matching ErrNotRecord.
func FromResource(attrs []attribute.KeyValue) (s sessions.Session, row bool, err error) {
	byKey := make(map[attribute.Key]attribute.Value, len(attrs))
	for _, kv := range attrs {
		byKey[kv.Key] = kv.Value
	}
	id, err := strconv.ParseUint(byKey[SessionIDKey].AsString(), 10, 64)
	if err != nil || byKey[SessionIDKey].Type() != attribute.STRING {
		return s, false, fmt.Errorf("%w: the Resource has no %s", ErrNotRecord, SessionIDKey)
	}
	s.ID = sessions.SessionID(id)
	started, ok := byKey[SessionStartedKey]
	if !ok {
		return s, false, nil
	}
	s.StartedUnixMs = started.AsInt64()
	s.Process = int(byKey[SessionProcessKey].AsInt64())
	s.OS = byKey[SessionOSKey].AsString()
	s.Arch = byKey[SessionArchKey].AsString()
	s.Label = byKey[SessionLabelKey].AsString()
	s.Version = byKey[SessionVersionKey].AsString()
	if ks := byKey[SessionResourceKey]; ks.Type() == attribute.STRINGSLICE {
		names := ks.AsStringSlice()
		s.Resource = make(sessions.Attrs, 0, len(names))
		for _, name := range names {
			v, ok := byKey[SessionResourceKey+"."+attribute.Key(name)]
			if !ok {
				if v, ok = byKey[attribute.Key(name)]; !ok {
					continue // not in the Resource: nothing to give back
				}
			}
			s.Resource = append(s.Resource, sessions.Attr{Key: name, Value: Value(v)})
		}
	}
	return s, true, nil
}
