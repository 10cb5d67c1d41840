// Package recordtags reads the `record` struct tags through which a reader
// types a record (sessions.Typed, sessions.Decode): which field takes which
// attribute, the record's name or its wall time, and how an attribute's
// plain value goes into a field, converted where no value is lost and
// refused where one would be. It is apart from package sessions because it
// knows nothing of records but their names, wall times and plain values:
// what reflection needs, written once.
package recordtags

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Where a field takes its value from: an attribute (FromAttribute), the
// record's name (",name") or its wall time (",wall").
const (
	FromAttribute = ""
	FromName      = "name"
	FromWall      = "wall"
)

// A Field is one field of a struct a plan fills.
type Field struct {
	// Index is the field's index sequence (reflect.Value.FieldByIndex).
	Index []int
	// Key is the attribute the field takes, when From is FromAttribute.
	Key string
	// From says where the field takes its value from.
	From string
}

// A Plan is how a struct type is filled from a record.
type Plan struct {
	// Fields are the fields filled, in the struct's order.
	Fields []Field
	// Keys are the attributes the fields take, so that a decoder reads
	// only those.
	Keys []string
	// Name is whether a field takes the record's name.
	Name bool
}

// plans caches a plan, or the error of a type that has none, by type and
// by the type a field may take a whole value as.
var plans sync.Map // planKey -> *Plan or error

type planKey struct{ t, whole reflect.Type }

// For returns the plan of the struct type t, which is made once. A field
// of type whole takes an attribute's value as it is (sessions.Value); a
// field of another type must hold a plain value (Set). It fails for a
// type that is not a struct, a tag option it does not know, and a field
// that cannot hold what its tag says.
func For(t, whole reflect.Type) (*Plan, error) {
	key := planKey{t, whole}
	if p, ok := plans.Load(key); ok {
		if err, bad := p.(error); bad {
			return nil, err
		}
		return p.(*Plan), nil
	}
	p, err := makePlan(t, whole)
	if err != nil {
		plans.Store(key, err)
		return nil, err
	}
	plans.Store(key, p)
	return p, nil
}

var durationType = reflect.TypeFor[time.Duration]()

func makePlan(t, whole reflect.Type) (*Plan, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("otelrecords: typed reads need a struct type, got %v", t)
	}
	p := &Plan{}
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
		fp := Field{Index: f.Index, Key: key}
		switch opt {
		case FromAttribute:
		case FromName:
			if f.Type.Kind() != reflect.String {
				return nil, fmt.Errorf("otelrecords: field %s: ,name needs a string field", f.Name)
			}
			fp.From = opt
		case FromWall:
			if f.Type != durationType {
				return nil, fmt.Errorf("otelrecords: field %s: ,wall needs a time.Duration field", f.Name)
			}
			fp.From = opt
		default:
			return nil, fmt.Errorf("otelrecords: field %s: unknown record tag option %q", f.Name, opt)
		}
		if fp.From == FromAttribute && f.Type != whole && !assignable(f.Type) {
			return nil, fmt.Errorf("otelrecords: field %s: type %v cannot hold an attribute value", f.Name, f.Type)
		}
		p.Fields = append(p.Fields, fp)
		switch fp.From {
		case FromAttribute:
			p.Keys = append(p.Keys, fp.Key)
		case FromName:
			p.Name = true
		}
	}
	return p, nil
}

func assignable(t reflect.Type) bool {
	if t.Kind() == reflect.Interface && t.NumMethod() == 0 {
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

// Set sets the field fv from x, an attribute's plain value (nil, a bool,
// an int64, a float64, a string, or a slice of one of them): as it is into
// an empty interface, element by element into a slice, converted into a
// number of another size where it fits. It fails for a value that does
// not fit the field, or would overflow it.
func Set(fv reflect.Value, x any) error {
	t := fv.Type()
	if t.Kind() == reflect.Interface {
		if x != nil {
			fv.Set(reflect.ValueOf(x))
		}
		return nil
	}
	if t.Kind() == reflect.Slice {
		src := reflect.ValueOf(x)
		if !src.IsValid() || src.Kind() != reflect.Slice {
			return fmt.Errorf("%s does not fit %v", kindOf(x), t)
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
	return setScalar(fv, x)
}

// kindOf names the kind of a plain value as sessions.ValueKind does: its
// Go type, and "empty" for nil.
func kindOf(x any) string {
	if x == nil {
		return "empty"
	}
	return fmt.Sprintf("%T", x)
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
