package sessions

import (
	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
)

// decodeByHand decodes a stored record value without the library, when
// the value is in the form writers give it: definite lengths, every map's
// keys known and in encoded order, every field and value of the type the
// format gives it. For anything else (a key of a later writer, a tag, an
// indefinite length, a damaged value) it returns false, and the library
// decides (decodeRecord): it never fails a value on its own, and what it
// accepts it decodes to the record the library does, so together they
// accept exactly what the library accepts (FuzzDecodeRecordDifferential).
//
// It reads the value twice. The first pass allocates nothing: it checks
// the value is one it decodes, and charges its items to the decoding
// budget as walkBudget does, refusing (to the library, which refuses it
// too) a value over it. Only then does the second pass allocate, and only
// what the record holds: a value left to the library has cost nothing, so
// the library's allocations stay within the budget, and no value makes
// the two allocate twice.
func decodeByHand(b []byte, v *Stamped[Record]) bool {
	var scratch Stamped[Record]
	if _, ok := checkByHand(b, &scratch); !ok {
		return false
	}
	// Every string of a small record is a piece of one copy of the value:
	// one allocation instead of one a string. A large one's strings are
	// copies of their own, so that a reader that keeps a record's name
	// (a tree, a table of the slowest) does not keep its huge attribute
	// values alive with it.
	d := recordReader{Decoder: cw.NewDecoder(b)}
	d.Fill = true
	if len(b) <= shareUpTo {
		d.Shared = string(b)
	}
	*v = Stamped[Record]{}
	return d.stamped(v)
}

// shareUpTo is the largest value whose strings decodeByHand makes pieces
// of one copy of it. Records are mostly a few hundred bytes; past this,
// one allocation per string costs little beside the value's size.
const shareUpTo = 16 << 10

// checkByHand is decodeByHand's first pass, which allocates nothing. It
// reports whether the value is one the hand-written decoder reads, and
// within its budget; it leaves in v what it read without allocating (the
// stamp, the wall time and the other numbers), and in the reader it
// returns where the body's name and attributes are.
func checkByHand(b []byte, v *Stamped[Record]) (recordReader, bool) {
	d := recordReader{Decoder: cw.NewDecoder(b)}
	ok := d.stamped(v) && d.Len() == 0 && d.Cost <= cw.Budget(len(b))
	return d, ok
}

// recordReader reads the record shape in place, charged to the decoding
// budget (cw.Decoder). Its methods return false for a value they leave to
// the library.
type recordReader struct {
	cw.Decoder
	// nameAt and attrsAt are where the body's name and attributes are, 0
	// when it has none.
	nameAt, attrsAt int
	// reuse, when not nil, is the array the next attribute set read goes
	// in, if it fits.
	reuse Attrs
}

// The keys of each map of the record shape, in encoded order.
var (
	stampedKeys = []string{cw.KeyStamp, cw.KeyRecord}
	stampKeys   = []string{cw.KeySeq, cw.KeySession, cw.KeyOffset}
	bodyKeys    = []string{cw.KeyName, cw.KeyAttrs, cw.KeyLinks, cw.KeyScope, cw.KeyEffect, cw.KeyEvents,
		cw.KeyInputs, cw.KeyStatus, cw.KeySpanID, cw.KeyWall, cw.KeyTraceID, cw.KeySpanKind, cw.KeyTraceState,
		cw.KeyDroppedAttrs, cw.KeyDroppedLinks, cw.KeyDroppedEvents, cw.KeyParentSpanID}
	eventKeys  = []string{cw.KeyName, cw.KeyAttrs, cw.KeyOffset}
	linkKeys   = []string{cw.KeyAttrs, cw.KeySpanID, cw.KeyTraceID, cw.KeyTraceState}
	scopeKeys  = []string{cw.KeyName, cw.KeyVersion}
	statusKeys = []string{cw.KeyCode, cw.KeyDescription}
)

func (d *recordReader) stamped(v *Stamped[Record]) bool {
	return d.Fields(stampedKeys, func(i int) bool {
		if i == 0 {
			return d.stamp(&v.Stamp)
		}
		return d.body(&v.Record)
	})
}

func (d *recordReader) stamp(st *Stamp) bool {
	return d.Fields(stampKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			st.Seq, ok = d.Uint64()
		case 1:
			var n uint64
			n, ok = d.Uint64()
			st.Session = SessionID(n)
		default:
			st.Offset, ok = d.Duration()
		}
		return ok
	})
}

func (d *recordReader) body(r *Record) bool {
	return d.Fields(bodyKeys, func(i int) (ok bool) {
		switch bodyKeys[i] {
		case cw.KeyName:
			d.nameAt = d.Offset()
			r.Name, ok = d.Text()
		case cw.KeyAttrs:
			d.attrsAt = d.Offset()
			r.Attributes, ok = d.attrs()
		case cw.KeyLinks:
			r.Links, ok = cw.List(&d.Decoder, d.link)
		case cw.KeyScope:
			ok = d.Pair(scopeKeys, &r.Scope.Name, &r.Scope.Version)
		case cw.KeyEffect:
			var p []byte
			p, ok = d.BytesOf(cw.MajorText)
			r.Effect = Observed
			if string(p) == "changed" { // as effectOf reads it
				r.Effect = Changed
			}
		case cw.KeyEvents:
			r.Events, ok = cw.List(&d.Decoder, d.event)
		case cw.KeyInputs:
			r.Inputs, ok = cw.List(&d.Decoder, d.Text)
		case cw.KeyStatus:
			ok = d.Pair(statusKeys, &r.Status.Code, &r.Status.Description)
		case cw.KeySpanID:
			ok = d.ID(r.SpanID[:])
		case cw.KeyWall:
			r.Wall, ok = d.Duration()
		case cw.KeyTraceID:
			ok = d.ID(r.TraceID[:])
		case cw.KeySpanKind:
			r.SpanKind, ok = d.Text()
		case cw.KeyTraceState:
			r.TraceState, ok = d.Text()
		case cw.KeyDroppedAttrs:
			r.DroppedAttributes, ok = d.Int()
		case cw.KeyDroppedLinks:
			r.DroppedLinks, ok = d.Int()
		case cw.KeyDroppedEvents:
			r.DroppedEvents, ok = d.Int()
		case cw.KeyParentSpanID:
			ok = d.ID(r.ParentSpanID[:])
		}
		return ok
	})
}

func (d *recordReader) event() (e Event, ok bool) {
	ok = d.Fields(eventKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			e.Name, ok = d.Text()
		case 1:
			e.Attributes, ok = d.attrs()
		default:
			e.Offset, ok = d.Duration()
		}
		return ok
	})
	return e, ok
}

func (d *recordReader) link() (l Link, ok bool) {
	ok = d.Fields(linkKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			l.Attributes, ok = d.attrs()
		case 1:
			ok = d.ID(l.SpanID[:])
		case 2:
			ok = d.ID(l.TraceID[:])
		default:
			l.TraceState, ok = d.Text()
		}
		return ok
	})
	return l, ok
}

// attrs reads an attribute set, sorted by key as attrsOf sorts it. An
// empty map is an empty set, not nil.
func (d *recordReader) attrs() (Attrs, bool) {
	n, ok := d.MapHead()
	var out Attrs
	switch {
	case d.Fill && d.reuse != nil && cap(d.reuse) >= n:
		out, d.reuse = d.reuse[:n], nil
	case d.Fill:
		out = make(Attrs, n)
	}
	var prev []byte
	for i := 0; ok && i < n; i++ {
		var k []byte
		if k, ok = d.Key(prev); !ok {
			break
		}
		key := d.Str(k)
		prev = k
		var v any
		if v, ok = d.Value(); d.Fill {
			out[i] = Attr{key, Value{v}}
		}
	}
	if ok && d.Fill {
		sortAttrs(out)
	}
	return out, ok
}

// attrsOnly reads an attribute set, checked already, keeping only the
// attributes whose key is one of keys, appended to dst in the order they
// come.
func (d *recordReader) attrsOnly(keys []string, dst Attrs) Attrs {
	n, _ := d.MapHead()
	for range n {
		k, _ := d.BytesOf(cw.MajorText)
		d.Fill = false
		for _, want := range keys {
			if string(k) == want {
				d.Fill = true
				break
			}
		}
		key := d.Str(k)
		if v, _ := d.Value(); d.Fill {
			dst = append(dst, Attr{key, Value{v}})
		}
	}
	d.Fill = true
	return dst
}
