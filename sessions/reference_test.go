package sessions

import "sync"

// The library's encoding of a record, through recordWire: what the
// exporter wrote before appendRecord, and the reference appendRecord must
// match to the byte.

// encodeRecordLibrary encodes a stamped record with the library, through
// recordWire.
func encodeRecordLibrary(st Stamp, r *Record) ([]byte, error) {
	w := wires.Get().(*recordWire)
	w.Stamp = st
	w.Record.fromRecord(r)
	b, err := encMode.Marshal(w)
	w.Record.release()
	*w = recordWire{}
	wires.Put(w)
	return b, err
}

// wires recycles the structs records are encoded through: the encoder
// takes an interface, so a struct of the stack's would escape to the heap
// at every record.
var wires = sync.Pool{New: func() any { return new(recordWire) }}

// attrMaps recycles the maps a record's attributes are encoded through:
// one per span would be the encoder's largest allocation.
var attrMaps = sync.Pool{New: func() any { return make(map[string]any, 8) }}

// wireAttrs returns a as a map for encoding: nil for nil (the key is
// omitted), an empty map for empty attributes (encoded as an empty map, as
// Attrs.MarshalCBOR does). A later duplicate key wins, as it does there.
func wireAttrs(a Attrs) map[string]any {
	if a == nil {
		return nil
	}
	m := attrMaps.Get().(map[string]any)
	for _, kv := range a {
		m[kv.Key] = kv.Value.v
	}
	return m
}

func releaseAttrs(m map[string]any) {
	if m != nil {
		clear(m)
		attrMaps.Put(m)
	}
}

func (w *bodyWire) fromRecord(r *Record) {
	*w = bodyWire{
		Name:         r.Name,
		Wall:         r.Wall,
		Attributes:   wireAttrs(r.Attributes),
		Status:       r.Status,
		TraceID:      r.TraceID,
		SpanID:       r.SpanID,
		ParentSpanID: r.ParentSpanID,
		Scope:        r.Scope,

		SpanKind:          r.SpanKind,
		TraceState:        r.TraceState,
		DroppedAttributes: r.DroppedAttributes,
		DroppedEvents:     r.DroppedEvents,
		DroppedLinks:      r.DroppedLinks,
		Inputs:            r.Inputs,
	}
	if r.Effect != Observed {
		w.Effect = r.Effect.String()
	}
	if len(r.Events) > 0 {
		w.Events = make([]eventWire, len(r.Events))
		for i, e := range r.Events {
			w.Events[i] = eventWire{Name: e.Name, Offset: e.Offset, Attributes: wireAttrs(e.Attributes)}
		}
	}
	if len(r.Links) > 0 {
		w.Links = make([]linkWire, len(r.Links))
		for i, l := range r.Links {
			w.Links[i] = linkWire{TraceID: l.TraceID, SpanID: l.SpanID, TraceState: l.TraceState, Attributes: wireAttrs(l.Attributes)}
		}
	}
}

// release gives the attribute maps back once the body is encoded.
func (w *bodyWire) release() {
	releaseAttrs(w.Attributes)
	for _, e := range w.Events {
		releaseAttrs(e.Attributes)
	}
	for _, l := range w.Links {
		releaseAttrs(l.Attributes)
	}
}
