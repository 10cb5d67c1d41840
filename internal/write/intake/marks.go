package intake

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// Marks is the marks policy: which implicit marks become records (a span
// that carries neither records.kind nor records.effect). The entry points
// export it as exporter.Marks and importer.Marks, where it is documented.
type Marks uint8

// The marks policies (exporter.MarksEnclosing, MarksAll, MarksNone).
const (
	MarksEnclosing Marks = iota
	MarksAll
	MarksNone
)

// DefaultMarks is the marks policy when neither an option nor
// OTELRECORDS_MARKS sets one.
const DefaultMarks = MarksEnclosing

// MaxEnclosingDepth bounds the walk from a record up through the open spans
// it started in, so that a runaway chain of nested spans costs a bounded
// amount. Implicit marks further up than this from every record inside
// them are not recorded.
const MaxEnclosingDepth = 128

// String returns the policy's name, as OTELRECORDS_MARKS takes it.
func (m Marks) String() string {
	switch m {
	case MarksEnclosing:
		return "enclosing"
	case MarksAll:
		return "all"
	case MarksNone:
		return "none"
	}
	return fmt.Sprintf("Marks(%d)", uint8(m))
}

// ParseMarks parses a marks policy by name: all, enclosing or none, in any
// case.
func ParseMarks(s string) (Marks, error) {
	if m, ok := parseName(s, MarksEnclosing, MarksAll, MarksNone); ok {
		return m, nil
	}
	return 0, fmt.Errorf("otelrecords: unknown marks policy %q (want all, enclosing or none)", s)
}

// parseName returns the one of values whose String is s, in any case.
func parseName[T fmt.Stringer](s string, values ...T) (T, bool) {
	for _, v := range values {
		if strings.EqualFold(s, v.String()) {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// SpeaksRecords reports whether attrs hold records.kind or records.effect:
// whether a span is a record or a mark the caller asked for, rather than
// an implicit mark. An invalid value counts: such a span is recorded as
// the mapping documents (a kind it cannot hold makes it a mark that says
// what it gave).
func SpeaksRecords(attrs []attribute.KeyValue) bool {
	for i := range attrs {
		if k := attrs[i].Key; k == spanbridge.KindKey || k == spanbridge.EffectKey {
			return true
		}
	}
	return false
}

// Speaks is SpeaksRecords and whether attrs say the span changed
// something (records.effect=changed), read in one pass: the Importer
// reads both as it holds a span. Of attributes that repeat
// records.effect (a span from elsewhere may; the SDK's never do) the
// last one speaks, as in the record the span maps to.
func Speaks(attrs []attribute.KeyValue) (speaks, changed bool) {
	for i := range attrs {
		switch attrs[i].Key {
		case spanbridge.KindKey:
			speaks = true
		case spanbridge.EffectKey:
			v := &attrs[i].Value
			speaks, changed = true, v.Type() == attribute.STRING && v.AsString() == spanbridge.EffectChanged
		}
	}
	return speaks, changed
}

// Records reports whether a span with attributes attrs becomes a record
// under the policy m; encloses says a record started inside it. The
// SpanProcessor and the Importer both ask it: the one keep decision of a
// span.
func (m Marks) Records(attrs []attribute.KeyValue, encloses bool) bool {
	return m.Keeps(SpeaksRecords(attrs), encloses)
}

// Keeps is Records for a caller that knows whether the span's
// attributes speak of records (SpeaksRecords): the Importer reads them
// once as it holds a span.
func (m Marks) Keeps(speaks, encloses bool) bool {
	return m == MarksAll || speaks || m == MarksEnclosing && encloses
}
