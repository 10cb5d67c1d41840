package recorder

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/internal/ground/cborwire"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// ErrTooLarge is wrapped by the error Recorder.Record returns for a record
// no store can hold, which it drops and counts in Stats.TooLarge: larger
// than MaxRecordSize encoded, with more attributes, events or array
// elements than a reader decodes (docs/FORMAT.md, "Decode limits"), or
// past a reader's decoding budget, any of which would make it unreadable
// once written.
var ErrTooLarge = errors.New("record too large")

// AppendEncoded appends the value of a record of kind k stamped st (its
// body's Effect set) to dst, or returns dst and an error wrapping
// ErrTooLarge when the record is beyond what a store holds or a reader
// decodes. The counts, and the bytes of its strings, are checked before
// encoding, so a record with a million attributes or a 100 MB value is
// not encoded to be thrown away; the decoding budget after, on the bytes
// (one pass that allocates nothing, for values past the size no record
// can pass it at). It is the one encoding of a record the Recorder and
// the exporter share, but for the plain records the exporter encodes
// itself, which are within every limit by their shape.
func AppendEncoded(dst []byte, k string, st sessions.Stamp, body *sessions.Record) ([]byte, error) {
	if err := checkLimits(body); err != nil {
		return dst, err
	}
	if err := checkLeastSize(k, body); err != nil {
		return dst, err
	}
	v := sessions.Stamped[sessions.Record]{Stamp: st, Record: *body}
	if dst == nil {
		// Nothing to append to: the encoding, in a buffer of its own size, is
		// the value.
		value, err := v.MarshalCBOR()
		if err != nil {
			return nil, err
		}
		if err := checkSize(k, len(value)); err != nil {
			return nil, err
		}
		if err := checkBudget(value); err != nil {
			return nil, err
		}
		return value, nil
	}
	n := len(dst)
	dst, err := v.AppendCBOR(dst)
	if err != nil {
		return dst[:n], err
	}
	if err := checkSize(k, len(dst)-n); err != nil {
		return dst[:n], err
	}
	if err := checkBudget(dst[n:]); err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// checkBudget returns an error wrapping ErrTooLarge when a reader would
// refuse value for what decoding it may allocate: many small items in
// few bytes (the readers' decoding budget, cborwire.CheckBudget).
func checkBudget(value []byte) error {
	if err := cborwire.CheckBudget(value); err != nil {
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return nil
}

// checkSize returns an error wrapping ErrTooLarge when a record of kind k
// whose value is n bytes is beyond what a store holds.
func checkSize(k string, n int) error {
	if size := keys.Size(k) + n; size > keys.MaxRecordSize {
		return fmt.Errorf("%w: %d bytes encoded, at most %d", ErrTooLarge, size, keys.MaxRecordSize)
	}
	return nil
}

// checkLimits returns an error wrapping ErrTooLarge when a reader would
// refuse to decode the record for its counts.
func checkLimits(body *sessions.Record) error {
	if len(body.Events) > cborwire.MaxArrayElements {
		return fmt.Errorf("%w: %d events, at most %d", ErrTooLarge, len(body.Events), cborwire.MaxArrayElements)
	}
	if err := checkAttrLimits(body.Attributes); err != nil {
		return err
	}
	for i := range body.Events {
		if err := checkAttrLimits(body.Events[i].Attributes); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
}

func checkAttrLimits(a sessions.Attrs) error {
	if len(a) > cborwire.MaxMapPairs {
		return fmt.Errorf("%w: %d attributes, at most %d", ErrTooLarge, len(a), cborwire.MaxMapPairs)
	}
	for _, kv := range a {
		if n := arrayLen(kv.Value); n > cborwire.MaxArrayElements {
			return fmt.Errorf("%w: attribute %q holds %d elements, at most %d", ErrTooLarge, cutName(kv.Key), n, cborwire.MaxArrayElements)
		}
	}
	return nil
}

// arrayLen returns how many elements an array value holds, and 0 for any
// other value.
func arrayLen(v sessions.Value) int {
	switch x := v.Any().(type) {
	case []bool:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []string:
		return len(x)
	}
	return 0
}

// cutName cuts a name quoted in an error to a readable length.
func cutName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// TruncatedKey is the resource attribute, true, that a session row
// carries when its label or Resource was cut to fit (see cutRow).
const TruncatedKey = "records.session.truncated"

// cutRow returns the session row s cut to what a store always takes:
// the label, every resource attribute key and every value cut to
// keys.MaxSessionValue bytes (a string at a character boundary, an array
// to its first elements), and resource attributes past keys.MaxSessionRow
// of the encoded row, or past what a reader decodes, left out. A row it
// cut carries TruncatedKey = true in its Resource. A row within the
// limits is returned as it is, sharing its Resource.
func cutRow(s sessions.Session) sessions.Session {
	cut := false
	if len(s.Label) > keys.MaxSessionValue {
		s.Label, cut = cutString(s.Label, keys.MaxSessionValue), true
	}
	var res sessions.Attrs
	for i, kv := range s.Resource {
		k, v, c := cutAttr(kv)
		if c && res == nil {
			res = append(make(sessions.Attrs, 0, len(s.Resource)+1), s.Resource[:i]...)
		}
		if res != nil {
			res = append(res, sessions.Attr{Key: k, Value: v})
		}
		cut = cut || c
	}
	if res != nil {
		s.Resource = res
	}
	// The marker needs its own pair, within what a reader decodes.
	if len(s.Resource) >= cborwire.MaxMapPairs {
		s.Resource, cut = s.Resource[:cborwire.MaxMapPairs-1:cborwire.MaxMapPairs-1], true
	}
	if !cut && rowSize(s) <= keys.MaxSessionRow {
		return s
	}
	s.Resource = withMarker(s.Resource)
	// Leave out attributes from the end, estimating first, until the row
	// fits; the marker stays.
	for n := len(s.Resource) - 1; rowSize(s) > keys.MaxSessionRow && n > 0; {
		over := rowSize(s) - keys.MaxSessionRow
		for n > 0 && over > 0 {
			n--
			over -= attrSize(s.Resource[n])
		}
		s.Resource = withMarker(slices.Clone(s.Resource[:n]))
	}
	return s
}

// withMarker returns attrs without TruncatedKey, then TruncatedKey = true.
func withMarker(attrs sessions.Attrs) sessions.Attrs {
	out := slices.DeleteFunc(slices.Clone(attrs), func(kv sessions.Attr) bool { return kv.Key == TruncatedKey })
	return append(out, sessions.Attr{Key: TruncatedKey, Value: sessions.BoolValue(true)})
}

// rowSize returns the encoded size of a session row (MaxSessionRow + 1
// if it does not encode).
func rowSize(s sessions.Session) int {
	b, err := s.MarshalCBOR()
	if err != nil {
		return keys.MaxSessionRow + 1
	}
	return len(b)
}

// attrSize estimates the encoded bytes of an attribute: its key, its
// value and a few bytes of headers each.
func attrSize(kv sessions.Attr) int {
	n := len(kv.Key) + 18
	switch x := kv.Value.Any().(type) {
	case string:
		n += len(x)
	case []string:
		for _, s := range x {
			n += len(s) + 9
		}
	case []bool:
		n += len(x)
	case []int64:
		n += 9 * len(x)
	case []float64:
		n += 9 * len(x)
	}
	return n
}

// cutAttr cuts a resource attribute's key and value to
// keys.MaxSessionValue bytes, and says whether it cut anything.
func cutAttr(kv sessions.Attr) (string, sessions.Value, bool) {
	const limit = keys.MaxSessionValue
	k, v, cut := kv.Key, kv.Value, false
	if len(k) > limit {
		k, cut = cutString(k, limit), true
	}
	switch x := v.Any().(type) {
	case string:
		if len(x) > limit {
			v, cut = sessions.StringValue(cutString(x, limit)), true
		}
	case []string:
		n, total := 0, 0
		for ; n < len(x) && total+len(x[n]) <= limit; n++ {
			total += len(x[n])
		}
		if n < len(x) {
			out := slices.Clone(x[:n])
			if rest := limit - total; rest > 0 {
				out = append(out, cutString(x[n], rest))
			}
			v, cut = sessions.SliceValue(out), true
		}
	case []bool:
		if len(x) > limit {
			v, cut = sessions.SliceValue(x[:limit]), true
		}
	case []int64:
		if len(x) > limit/8 {
			v, cut = sessions.SliceValue(x[:limit/8]), true
		}
	case []float64:
		if len(x) > limit/8 {
			v, cut = sessions.SliceValue(x[:limit/8]), true
		}
	}
	return k, v, cut
}

// cutString cuts s to at most n bytes, not inside a UTF-8 character (a
// string that is not UTF-8 is cut at most 3 bytes shorter than n).
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.RuneStart(s[i]) {
		i = n
	}
	return s[:i]
}
