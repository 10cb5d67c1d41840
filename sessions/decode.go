package sessions

import (
	"bytes"
	"math"
	"strconv"
	"time"

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
	d := recordReader{Reader: cw.NewReader(b), fill: true}
	if len(b) <= shareUpTo {
		d.s = string(b)
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
	d := recordReader{Reader: cw.NewReader(b)}
	ok := d.stamped(v) && d.Len() == 0 && d.cost <= budget(len(b))
	return d, ok
}

// recordReader reads the record shape in place. Its methods return false
// for a value they leave to the library.
type recordReader struct {
	cw.Reader
	// fill is set in the second pass: the first only checks and charges,
	// and makes nothing that allocates (no string, slice or boxed value).
	fill bool
	// s is the value as a string, whose pieces the strings read are; when
	// it is empty each string read is a copy of its own.
	s    string
	cost int64 // the budget's charges so far
	// nameAt and attrsAt are where the body's name and attributes are, 0
	// when it has none.
	nameAt, attrsAt int
}

// str returns the string whose bytes are p, a piece of the value.
func (d *recordReader) str(p []byte) string {
	switch {
	case !d.fill || len(p) == 0:
		return ""
	case d.s == "":
		return string(p)
	}
	off := d.Offset() - len(p) // p was the last thing read
	return d.s[off : off+len(p)]
}

// mapHead reads the head of a map of definite length and charges it.
func (d *recordReader) mapHead() (int, bool) {
	h, ok := d.Head()
	if !ok || h.Major != cw.MajorMap || h.Indefinite() || h.Arg > maxMapPairs {
		return 0, false
	}
	d.cost += costMap
	if h.Arg > 0 {
		d.cost += costGroup + 2*int64(h.Arg)*costMapItem
	}
	return int(h.Arg), true
}

// arrayHead reads the head of an array of definite length and charges it.
func (d *recordReader) arrayHead() (int, bool) {
	h, ok := d.Head()
	if !ok || h.Major != cw.MajorArray || h.Indefinite() || h.Arg > maxArrayElements {
		return 0, false
	}
	d.cost += costArray + int64(h.Arg)*costArrayItem
	return int(h.Arg), true
}

// bytesOf reads a string of major type m, charged as walkBudget charges
// it: an empty text string costs nothing, an empty byte string its header.
func (d *recordReader) bytesOf(m cw.Major) ([]byte, bool) {
	p, ok := d.String(m)
	if ok && (len(p) > 0 || m == cw.MajorBytes) {
		d.cost += costString + int64(len(p))
	}
	return p, ok
}

func (d *recordReader) text() (string, bool) {
	p, ok := d.bytesOf(cw.MajorText)
	return d.str(p), ok
}

// key reads a map's next key, which must follow prev in encoded order:
// keys out of order, or repeated, are the library's to judge.
func (d *recordReader) key(prev []byte) ([]byte, bool) {
	k, ok := d.bytesOf(cw.MajorText)
	if !ok || prev != nil && (len(k) < len(prev) || len(k) == len(prev) && bytes.Compare(k, prev) <= 0) {
		return nil, false
	}
	return k, true
}

// field reads the next key of a struct's map, one of keys (its keys in
// encoded order), and returns its index, which must be above last.
func (d *recordReader) field(keys []string, last int) (int, bool) {
	k, ok := d.bytesOf(cw.MajorText)
	if !ok {
		return 0, false
	}
	for i := last + 1; i < len(keys); i++ {
		if string(k) == keys[i] {
			return i, true
		}
	}
	return 0, false // unknown, out of order or repeated
}

func (d *recordReader) int64() (int64, bool) {
	h, ok := d.Head()
	n, isInt := h.Int()
	d.cost += costNumber
	return n, ok && isInt
}

func (d *recordReader) int() (int, bool) {
	n, ok := d.int64()
	return int(n), ok && (strconv.IntSize == 64 || n >= math.MinInt32 && n <= math.MaxInt32)
}

func (d *recordReader) uint64() (uint64, bool) {
	h, ok := d.Head()
	d.cost += costNumber
	return h.Arg, ok && h.Major == cw.MajorUint && !h.Indefinite()
}

func (d *recordReader) duration() (time.Duration, bool) {
	n, ok := d.int64()
	return time.Duration(n), ok
}

// id reads a trace or span id into dst: a byte string of its length.
func (d *recordReader) id(dst []byte) bool {
	p, ok := d.bytesOf(cw.MajorBytes)
	copy(dst, p)
	return ok && len(p) == len(dst)
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

// fields reads a struct's map: for each of its keys, in order, read reads
// the value of the key of that index. A key missing leaves its field
// zero, as the library does.
func (d *recordReader) fields(keys []string, read func(i int) bool) bool {
	n, ok := d.mapHead()
	last := -1
	for ; ok && n > 0; n-- {
		if last, ok = d.field(keys, last); ok {
			ok = read(last)
		}
	}
	return ok
}

func (d *recordReader) stamped(v *Stamped[Record]) bool {
	return d.fields(stampedKeys, func(i int) bool {
		if i == 0 {
			return d.stamp(&v.Stamp)
		}
		return d.body(&v.Record)
	})
}

func (d *recordReader) stamp(st *Stamp) bool {
	return d.fields(stampKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			st.Seq, ok = d.uint64()
		case 1:
			var n uint64
			n, ok = d.uint64()
			st.Session = SessionID(n)
		default:
			st.Offset, ok = d.duration()
		}
		return ok
	})
}

func (d *recordReader) body(r *Record) bool {
	return d.fields(bodyKeys, func(i int) (ok bool) {
		switch bodyKeys[i] {
		case cw.KeyName:
			d.nameAt = d.Offset()
			r.Name, ok = d.text()
		case cw.KeyAttrs:
			d.attrsAt = d.Offset()
			r.Attributes, ok = d.attrs()
		case cw.KeyLinks:
			r.Links, ok = list(d, d.link)
		case cw.KeyScope:
			ok = d.pair(scopeKeys, &r.Scope.Name, &r.Scope.Version)
		case cw.KeyEffect:
			var p []byte
			p, ok = d.bytesOf(cw.MajorText)
			r.Effect = Observed
			if string(p) == "changed" { // as effectOf reads it
				r.Effect = Changed
			}
		case cw.KeyEvents:
			r.Events, ok = list(d, d.event)
		case cw.KeyInputs:
			r.Inputs, ok = list(d, d.text)
		case cw.KeyStatus:
			ok = d.pair(statusKeys, &r.Status.Code, &r.Status.Description)
		case cw.KeySpanID:
			ok = d.id(r.SpanID[:])
		case cw.KeyWall:
			r.Wall, ok = d.duration()
		case cw.KeyTraceID:
			ok = d.id(r.TraceID[:])
		case cw.KeySpanKind:
			r.SpanKind, ok = d.text()
		case cw.KeyTraceState:
			r.TraceState, ok = d.text()
		case cw.KeyDroppedAttrs:
			r.DroppedAttributes, ok = d.int()
		case cw.KeyDroppedLinks:
			r.DroppedLinks, ok = d.int()
		case cw.KeyDroppedEvents:
			r.DroppedEvents, ok = d.int()
		case cw.KeyParentSpanID:
			ok = d.id(r.ParentSpanID[:])
		}
		return ok
	})
}

// pair reads a map of two text fields: a Scope or a Status.
func (d *recordReader) pair(keys []string, first, second *string) bool {
	return d.fields(keys, func(i int) (ok bool) {
		if i == 0 {
			*first, ok = d.text()
		} else {
			*second, ok = d.text()
		}
		return ok
	})
}

// list reads an array of what one reads. An empty array is an empty
// slice, not nil, as the library reads it.
func list[T any](d *recordReader, one func() (T, bool)) ([]T, bool) {
	n, ok := d.arrayHead()
	var out []T
	if d.fill {
		out = make([]T, n)
	}
	for i := 0; ok && i < n; i++ {
		var x T
		if x, ok = one(); d.fill {
			out[i] = x
		}
	}
	return out, ok
}

func (d *recordReader) event() (e Event, ok bool) {
	ok = d.fields(eventKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			e.Name, ok = d.text()
		case 1:
			e.Attributes, ok = d.attrs()
		default:
			e.Offset, ok = d.duration()
		}
		return ok
	})
	return e, ok
}

func (d *recordReader) link() (l Link, ok bool) {
	ok = d.fields(linkKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			l.Attributes, ok = d.attrs()
		case 1:
			ok = d.id(l.SpanID[:])
		case 2:
			ok = d.id(l.TraceID[:])
		default:
			l.TraceState, ok = d.text()
		}
		return ok
	})
	return l, ok
}

// attrs reads an attribute set, sorted by key as attrsOf sorts it. An
// empty map is an empty set, not nil.
func (d *recordReader) attrs() (Attrs, bool) {
	n, ok := d.mapHead()
	var out Attrs
	if d.fill {
		out = make(Attrs, n)
	}
	var prev []byte
	for i := 0; ok && i < n; i++ {
		var k []byte
		if k, ok = d.key(prev); !ok {
			break
		}
		key := d.str(k)
		prev = k
		var v Value
		if v, ok = d.value(); d.fill {
			out[i] = Attr{key, v}
		}
	}
	if ok && d.fill {
		sortAttrs(out)
	}
	return out, ok
}

// attrsOnly reads an attribute set, checked already, keeping only the
// attributes whose key is one of keys, appended to dst in the order they
// come.
func (d *recordReader) attrsOnly(keys []string, dst Attrs) Attrs {
	n, _ := d.mapHead()
	for range n {
		k, _ := d.bytesOf(cw.MajorText)
		d.fill = false
		for _, want := range keys {
			if string(k) == want {
				d.fill = true
				break
			}
		}
		key := d.str(k)
		if v, _ := d.value(); d.fill {
			dst = append(dst, Attr{key, v})
		}
	}
	d.fill = true
	return dst
}

// scalar is the kind of a plain CBOR item that an attribute's value, or
// an element of one, may be: KindBool, KindInt64, KindFloat64 or
// KindString, read from its head; KindEmpty for anything else.
func scalar(h cw.Head) ValueKind {
	switch h.Major {
	case cw.MajorUint, cw.MajorNeg:
		if _, ok := h.Int(); ok {
			return KindInt64
		}
	case cw.MajorText:
		if !h.Indefinite() {
			return KindString
		}
	case cw.MajorSimple:
		switch h.Info {
		case cw.InfoFalse, cw.InfoTrue:
			return KindBool
		case cw.InfoFloat16, cw.InfoFloat32, cw.InfoFloat64:
			return KindFloat64
		}
	}
	return KindEmpty
}

// value reads an attribute's value as valueOf makes it of what the
// library decodes: null is the empty Value, an empty array a string
// array, and an array's first element gives the type all must have.
func (d *recordReader) value() (Value, bool) {
	h, ok := d.Head()
	if !ok {
		return Value{}, false
	}
	if h.Major == cw.MajorSimple && h.Info == cw.InfoNull {
		return Value{}, true
	}
	if h.Major != cw.MajorArray {
		k := scalar(h)
		x, ok := d.element(h, k)
		if !ok || !d.fill {
			return Value{}, ok
		}
		switch k {
		case KindBool:
			return Value{x.b}, true
		case KindInt64:
			return Value{x.n}, true
		case KindFloat64:
			return Value{x.f}, true
		}
		return Value{x.s}, true
	}
	if h.Indefinite() || h.Arg > maxArrayElements {
		return Value{}, false
	}
	n := int(h.Arg)
	d.cost += costArray + int64(n)*costArrayItem
	if n == 0 {
		if !d.fill {
			return Value{}, true
		}
		return Value{[]string{}}, true
	}
	at := d.Offset()
	first, _ := d.Head()
	d.Seek(at)
	switch scalar(first) {
	case KindBool:
		return elements(d, n, KindBool, func(x item) bool { return x.b })
	case KindInt64:
		return elements(d, n, KindInt64, func(x item) int64 { return x.n })
	case KindFloat64:
		return elements(d, n, KindFloat64, func(x item) float64 { return x.f })
	case KindString:
		return elements(d, n, KindString, func(x item) string { return x.s })
	}
	return Value{}, false
}

// item is a scalar read by element.
type item struct {
	b bool
	n int64
	f float64
	s string
}

// element reads the rest of a scalar of kind k whose head is h, and
// charges it.
func (d *recordReader) element(h cw.Head, k ValueKind) (item, bool) {
	var x item
	switch k {
	case KindBool:
		x.b = h.Info == cw.InfoTrue
	case KindInt64:
		x.n, _ = h.Int()
		d.cost += costNumber
	case KindFloat64:
		x.f, _ = h.Float()
		d.cost += costNumber
	case KindString:
		p, ok := d.Take(h.Arg)
		if !ok {
			return x, false
		}
		if len(p) > 0 {
			d.cost += costString + int64(len(p))
		}
		x.s = d.str(p)
	default:
		return x, false
	}
	return x, true
}

// elements reads the n elements of an array, all of kind k, into a slice.
func elements[T bool | int64 | float64 | string](d *recordReader, n int, k ValueKind, get func(item) T) (Value, bool) {
	var out []T
	if d.fill {
		out = make([]T, n)
	}
	for i := range n {
		h, ok := d.Head()
		if !ok || scalar(h) != k {
			return Value{}, false
		}
		x, ok := d.element(h, k)
		if !ok {
			return Value{}, false
		}
		if d.fill {
			out[i] = get(x)
		}
	}
	if !d.fill {
		return Value{}, true
	}
	return Value{out}, true
}
