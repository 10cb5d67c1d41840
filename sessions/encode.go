package sessions

import (
	"fmt"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
)

// appendRecord appends the value a stamped record is stored as
// (docs/FORMAT.md §3.2) to dst, and returns the extended slice. It writes
// by hand what the library writes for recordWire, to the byte (the tests
// and FuzzEncodeRecordDifferential hold it to that): keys in encoded
// order, a key left out exactly where the wire structs' omitzero and
// omitempty tags leave it out, attribute sets sorted by encoded key with
// a later duplicate winning. The exporter encodes every span, and through
// the library's reflection that was a quarter of its time; this allocates
// nothing but the growth of dst.
func appendRecord(dst []byte, st Stamp, r *Record) ([]byte, error) {
	dst = append(dst, 0xa2) // {stamp, record}
	dst = cw.AppendText(dst, cw.KeyStamp)
	dst = append(dst, 0xa3) // every key of a stamp is always there
	dst = cw.AppendUint(cw.AppendText(dst, cw.KeySeq), st.Seq)
	dst = cw.AppendUint(cw.AppendText(dst, cw.KeySession), uint64(st.Session))
	dst = cw.AppendInt(cw.AppendText(dst, cw.KeyOffset), int64(st.Offset))
	dst = cw.AppendText(dst, cw.KeyRecord)
	return appendBody(dst, r)
}

// appendBody appends a record's body, bodyWire's keys in encoded order.
func appendBody(dst []byte, r *Record) ([]byte, error) {
	hasStatus := r.Status != Status{}
	hasScope := r.Scope != Scope{}
	dst = cw.AppendMapHead(dst, 2+ // name and wall_ns are always there
		count(r.Attributes != nil)+count(len(r.Links) > 0)+count(hasScope)+
		count(r.Effect != Observed)+count(len(r.Events) > 0)+count(r.Inputs != nil)+
		count(hasStatus)+count(!r.SpanID.IsZero())+count(!r.TraceID.IsZero())+
		count(r.SpanKind != "")+count(r.TraceState != "")+count(r.DroppedAttributes != 0)+
		count(r.DroppedLinks != 0)+count(r.DroppedEvents != 0)+count(!r.ParentSpanID.IsZero()))
	dst = cw.AppendText(cw.AppendText(dst, cw.KeyName), r.Name)
	var err error
	if r.Attributes != nil {
		if dst, err = appendAttrs(cw.AppendText(dst, cw.KeyAttrs), r.Attributes); err != nil {
			return dst, err
		}
	}
	if len(r.Links) > 0 {
		dst = cw.AppendArrayHead(cw.AppendText(dst, cw.KeyLinks), len(r.Links))
		for i := range r.Links {
			if dst, err = appendLink(dst, &r.Links[i]); err != nil {
				return dst, fmt.Errorf("link %d: %w", i, err)
			}
		}
	}
	if hasScope {
		dst = cw.AppendPair(cw.AppendText(dst, cw.KeyScope), cw.KeyName, r.Scope.Name, cw.KeyVersion, r.Scope.Version)
	}
	if r.Effect != Observed {
		dst = cw.AppendText(cw.AppendText(dst, cw.KeyEffect), r.Effect.String())
	}
	if len(r.Events) > 0 {
		dst = cw.AppendArrayHead(cw.AppendText(dst, cw.KeyEvents), len(r.Events))
		for i := range r.Events {
			if dst, err = appendEvent(dst, &r.Events[i]); err != nil {
				return dst, fmt.Errorf("event %d: %w", i, err)
			}
		}
	}
	if r.Inputs != nil {
		dst = cw.AppendTexts(cw.AppendText(dst, cw.KeyInputs), r.Inputs)
	}
	if hasStatus {
		dst = cw.AppendPair(cw.AppendText(dst, cw.KeyStatus), cw.KeyCode, r.Status.Code, cw.KeyDescription, r.Status.Description)
	}
	if !r.SpanID.IsZero() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeySpanID), r.SpanID[:])
	}
	dst = cw.AppendInt(cw.AppendText(dst, cw.KeyWall), int64(r.Wall))
	if !r.TraceID.IsZero() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeyTraceID), r.TraceID[:])
	}
	if r.SpanKind != "" {
		dst = cw.AppendText(cw.AppendText(dst, cw.KeySpanKind), r.SpanKind)
	}
	if r.TraceState != "" {
		dst = cw.AppendText(cw.AppendText(dst, cw.KeyTraceState), r.TraceState)
	}
	if r.DroppedAttributes != 0 {
		dst = cw.AppendInt(cw.AppendText(dst, cw.KeyDroppedAttrs), int64(r.DroppedAttributes))
	}
	if r.DroppedLinks != 0 {
		dst = cw.AppendInt(cw.AppendText(dst, cw.KeyDroppedLinks), int64(r.DroppedLinks))
	}
	if r.DroppedEvents != 0 {
		dst = cw.AppendInt(cw.AppendText(dst, cw.KeyDroppedEvents), int64(r.DroppedEvents))
	}
	if !r.ParentSpanID.IsZero() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeyParentSpanID), r.ParentSpanID[:])
	}
	return dst, nil
}

// count is 1 for a key that is there, 0 for one left out.
func count(there bool) int {
	if there {
		return 1
	}
	return 0
}

// appendEvent appends an event as eventWire encodes it.
func appendEvent(dst []byte, e *Event) ([]byte, error) {
	dst = cw.AppendMapHead(dst, 2+count(e.Attributes != nil))
	dst = cw.AppendText(cw.AppendText(dst, cw.KeyName), e.Name)
	if e.Attributes != nil {
		var err error
		if dst, err = appendAttrs(cw.AppendText(dst, cw.KeyAttrs), e.Attributes); err != nil {
			return dst, err
		}
	}
	return cw.AppendInt(cw.AppendText(dst, cw.KeyOffset), int64(e.Offset)), nil
}

// appendLink appends a link as linkWire encodes it.
func appendLink(dst []byte, l *Link) ([]byte, error) {
	dst = cw.AppendMapHead(dst, count(l.Attributes != nil)+count(!l.SpanID.IsZero())+
		count(!l.TraceID.IsZero())+count(l.TraceState != ""))
	if l.Attributes != nil {
		var err error
		if dst, err = appendAttrs(cw.AppendText(dst, cw.KeyAttrs), l.Attributes); err != nil {
			return dst, err
		}
	}
	if !l.SpanID.IsZero() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeySpanID), l.SpanID[:])
	}
	if !l.TraceID.IsZero() {
		dst = cw.AppendBytes(cw.AppendText(dst, cw.KeyTraceID), l.TraceID[:])
	}
	if l.TraceState != "" {
		dst = cw.AppendText(cw.AppendText(dst, cw.KeyTraceState), l.TraceState)
	}
	return dst, nil
}

// appendAttrs appends an attribute set as one map, keys in encoded order,
// a later duplicate winning, as the Go map the library encoded held them.
func appendAttrs(dst []byte, a Attrs) ([]byte, error) {
	var stack [16]int // a record's sets are small: sorting them allocates nothing
	order := cw.SortKeys(stack[:0], len(a), func(i int) string { return a[i].Key })
	dst = cw.AppendMapHead(dst, len(order))
	for _, i := range order {
		var err error
		if dst, err = cw.AppendValue(cw.AppendText(dst, a[i].Key), a[i].Value.v); err != nil {
			return dst, fmt.Errorf("attribute %q: %w", a[i].Key, err)
		}
	}
	return dst, nil
}
