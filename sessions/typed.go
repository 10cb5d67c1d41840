package sessions

import (
	"fmt"
	"iter"
	"reflect"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/ground/recordtags"
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
		plan, err := recordtags.For(reflect.TypeFor[T](), valueType)
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
			if err := fillStruct(plan, dst, &rec.Record); err != nil {
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
func decodeFor(p *recordtags.Plan, b []byte, rec *Stamped[Record], attrs Attrs) error {
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
	d.Fill = true
	if p.Name && d.nameAt > 0 {
		d.Seek(d.nameAt)
		rec.Record.Name, _ = d.Text()
	}
	rec.Record.Attributes = nil
	if d.attrsAt > 0 && len(p.Keys) > 0 {
		d.Seek(d.attrsAt)
		rec.Record.Attributes = d.attrsOnly(p.Keys, attrs)
	}
	return nil
}

// Decode fills the struct pointed to by dst from a record, as Typed does.
func Decode(rec Record, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("otelrecords: Decode needs a non-nil pointer to a struct, got %T", dst)
	}
	plan, err := recordtags.For(v.Elem().Type(), valueType)
	if err != nil {
		return err
	}
	return fillStruct(plan, v.Elem(), &rec)
}

// fillStruct fills dst, a struct of the plan's type, from rec.
func fillStruct(p *recordtags.Plan, dst reflect.Value, rec *Record) error {
	for _, f := range p.Fields {
		fv := dst.FieldByIndex(f.Index)
		switch f.From {
		case recordtags.FromName:
			fv.SetString(rec.Name)
			continue
		case recordtags.FromWall:
			fv.SetInt(int64(rec.Wall))
			continue
		}
		v, ok := rec.Attributes.Get(f.Key)
		if !ok {
			continue
		}
		if fv.Type() == valueType {
			fv.Set(reflect.ValueOf(v))
			continue
		}
		if err := recordtags.Set(fv, v.Any()); err != nil {
			return fmt.Errorf("attribute %q: %w", f.Key, err)
		}
	}
	return nil
}

// valueType is the type of a field that takes an attribute's Value as it
// is.
var valueType = reflect.TypeFor[Value]()
