package sessions

import (
	"fmt"
	"iter"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// Typed yields every record of a kind in stamp order, decoded into T, a
// struct whose fields are filled from the record's attributes through
// struct tags:
//
//	type Tune struct {
//		Key    string        `record:"autotune.key"`
//		Winner string        `record:"winner"`
//		Tried  []string      `record:"candidates"`
//		Name   string        `record:",name"` // the span's name
//		Wall   time.Duration `record:",wall"` // how long it ran
//	}
//
// A field without a tag is filled from the attribute of its own name; a tag
// of "-" leaves it alone. A missing attribute leaves its field at the zero
// value. A record whose attributes do not fit T (a string for an int, an
// int beyond the field's range) is skipped and counted in Skipped, like a
// value that does not decode. T must be a struct type, or the sequence
// yields one error.
func Typed[T any](r *Records, kind string, opts ...ReadOption) iter.Seq2[Stamped[T], error] {
	return func(yield func(Stamped[T], error) bool) {
		plan, err := planFor(reflect.TypeFor[T]())
		if err != nil {
			yield(Stamped[T]{}, err)
			return
		}
		k, err := keys.CheckKind(kind)
		if err != nil {
			yield(Stamped[T]{}, err)
			return
		}
		// One record and one T serve every value: a typed read decodes
		// only what T's fields take, and nothing of it is kept but what
		// is copied into the T yielded.
		var (
			rec   Stamped[Record]
			attrs Attrs
			out   = new(Stamped[T])
			dst   = reflect.ValueOf(&out.Record).Elem()
		)
		start, end := bounds(keys.Namespace(k), opts)
		decodeRange(r, start, end, true, func(session, seq uint64, value []byte) (Stamped[T], error) {
			if err := decodeFor(plan, value, &rec, attrs[:0]); err != nil {
				return Stamped[T]{}, err
			}
			if rec.Record.Attributes != nil {
				attrs = rec.Record.Attributes
			}
			if err := fromKeys(&rec.Stamp, session, seq); err != nil {
				return Stamped[T]{}, err
			}
			*out = Stamped[T]{Stamp: rec.Stamp}
			if err := plan.fill(dst, &rec.Record); err != nil {
				return Stamped[T]{}, err
			}
			return *out, nil
		}, yield)
	}
}

// decodeFor decodes of a stored record value what the plan's fields take:
// its stamp, its name and wall time, and those of its attributes the
// plan names, which it appends to attrs. A value the hand-written decoder
// leaves to the library is decoded whole. It fails where decodeRecord
// fails, and what the plan fills from it is what it fills from the whole
// record.
func decodeFor(p *structPlan, b []byte, rec *Stamped[Record], attrs Attrs) error {
	if len(b) > maxValueSize {
		_, err := decodeRecord(b)
		return err
	}
	*rec = Stamped[Record]{}
	d, ok := checkByHand(b, rec)
	if !ok {
		var err error
		*rec, err = decodeRecordLibrary(b)
		return err
	}
	d.fill = true
	if p.name && d.nameAt > 0 {
		d.Seek(d.nameAt)
		rec.Record.Name, _ = d.text()
	}
	rec.Record.Attributes = nil
	if d.attrsAt > 0 && len(p.keys) > 0 {
		d.Seek(d.attrsAt)
		rec.Record.Attributes = d.attrsOnly(p.keys, attrs)
	}
	return nil
}

// Decode fills the struct pointed to by dst from a record, as Typed does.
func Decode(rec Record, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("otelrecords: Decode needs a non-nil pointer to a struct, got %T", dst)
	}
	plan, err := planFor(v.Elem().Type())
	if err != nil {
		return err
	}
	return plan.fill(v.Elem(), &rec)
}

type fieldPlan struct {
	index []int
	key   string
	from  string // "", "name" or "wall"
}

type structPlan struct {
	fields []fieldPlan
	keys   []string // the attributes the fields take
	name   bool     // whether a field takes the record's name
}

var plans sync.Map // reflect.Type -> *structPlan or error

func planFor(t reflect.Type) (*structPlan, error) {
	if p, ok := plans.Load(t); ok {
		if err, bad := p.(error); bad {
			return nil, err
		}
		return p.(*structPlan), nil
	}
	p, err := makePlan(t)
	if err != nil {
		plans.Store(t, err)
		return nil, err
	}
	plans.Store(t, p)
	return p, nil
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	valueType    = reflect.TypeFor[Value]()
)

func makePlan(t reflect.Type) (*structPlan, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("otelrecords: typed reads need a struct type, got %v", t)
	}
	p := &structPlan{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		tag, hasTag := f.Tag.Lookup("record")
		if tag == "-" {
			continue
		}
		key, opt, _ := strings.Cut(tag, ",")
		if !hasTag || (key == "" && opt == "") {
			key = f.Name
		}
		fp := fieldPlan{index: f.Index, key: key}
		switch opt {
		case "":
		case "name":
			if f.Type.Kind() != reflect.String {
				return nil, fmt.Errorf("otelrecords: field %s: ,name needs a string field", f.Name)
			}
			fp.from = opt
		case "wall":
			if f.Type != durationType {
				return nil, fmt.Errorf("otelrecords: field %s: ,wall needs a time.Duration field", f.Name)
			}
			fp.from = opt
		default:
			return nil, fmt.Errorf("otelrecords: field %s: unknown record tag option %q", f.Name, opt)
		}
		if fp.from == "" && !assignable(f.Type) {
			return nil, fmt.Errorf("otelrecords: field %s: type %v cannot hold an attribute value", f.Name, f.Type)
		}
		p.fields = append(p.fields, fp)
		switch fp.from {
		case "":
			p.keys = append(p.keys, fp.key)
		case "name":
			p.name = true
		}
	}
	return p, nil
}

func assignable(t reflect.Type) bool {
	if t == valueType || t.Kind() == reflect.Interface && t.NumMethod() == 0 {
		return true
	}
	if t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func (p *structPlan) fill(dst reflect.Value, rec *Record) error {
	for _, f := range p.fields {
		fv := dst.FieldByIndex(f.index)
		switch f.from {
		case "name":
			fv.SetString(rec.Name)
			continue
		case "wall":
			fv.SetInt(int64(rec.Wall))
			continue
		}
		v, ok := rec.Attributes.Get(f.key)
		if !ok {
			continue
		}
		if err := setValue(fv, v); err != nil {
			return fmt.Errorf("attribute %q: %w", f.key, err)
		}
	}
	return nil
}

func setValue(fv reflect.Value, v Value) error {
	t := fv.Type()
	if t == valueType {
		fv.Set(reflect.ValueOf(v))
		return nil
	}
	if t.Kind() == reflect.Interface {
		if v.Any() != nil {
			fv.Set(reflect.ValueOf(v.Any()))
		}
		return nil
	}
	if t.Kind() == reflect.Slice {
		src := reflect.ValueOf(v.Any())
		if !src.IsValid() || src.Kind() != reflect.Slice {
			return fmt.Errorf("%s does not fit %v", v.Kind(), t)
		}
		out := reflect.MakeSlice(t, src.Len(), src.Len())
		for i := range src.Len() {
			if err := setScalar(out.Index(i), src.Index(i).Interface()); err != nil {
				return err
			}
		}
		fv.Set(out)
		return nil
	}
	return setScalar(fv, v.Any())
}

func setScalar(fv reflect.Value, x any) error {
	switch fv.Kind() {
	case reflect.String:
		if s, ok := x.(string); ok {
			fv.SetString(s)
			return nil
		}
	case reflect.Bool:
		if b, ok := x.(bool); ok {
			fv.SetBool(b)
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := x.(int64); ok {
			if fv.OverflowInt(n) {
				return fmt.Errorf("%d overflows %v", n, fv.Type())
			}
			fv.SetInt(n)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n, ok := x.(int64); ok {
			if n < 0 || fv.OverflowUint(uint64(n)) {
				return fmt.Errorf("%d overflows %v", n, fv.Type())
			}
			fv.SetUint(uint64(n))
			return nil
		}
	case reflect.Float32, reflect.Float64:
		switch n := x.(type) {
		case float64:
			fv.SetFloat(n)
			return nil
		case int64:
			fv.SetFloat(float64(n))
			return nil
		}
	}
	return fmt.Errorf("%T does not fit %v", x, fv.Type())
}
