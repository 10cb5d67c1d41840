package recorder

import (
	"errors"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// ErrTooLarge is wrapped by the error Recorder.Record returns for a record
// no store can hold, which it drops and counts in Stats.TooLarge: larger
// than MaxRecordSize encoded, or with more attributes, events or array
// elements than a reader decodes (docs/FORMAT.md, "Decode limits"), which
// would make it unreadable once written.
var ErrTooLarge = errors.New("record too large")

// encodeWithin encodes a record of kind k, or returns an error wrapping
// ErrTooLarge when it is beyond what a store holds or a reader decodes.
// The counts are checked before encoding, so a record with a million
// attributes is not encoded to be thrown away.
func encodeWithin(k string, st sessions.Stamp, body *sessions.Record) ([]byte, error) {
	if err := checkLimits(body); err != nil {
		return nil, err
	}
	value, err := sessions.Stamped[sessions.Record]{Stamp: st, Record: *body}.MarshalCBOR()
	if err != nil {
		return nil, err
	}
	if n := keys.Size(k) + len(value); n > keys.MaxRecordSize {
		return nil, fmt.Errorf("%w: %d bytes encoded, at most %d", ErrTooLarge, n, keys.MaxRecordSize)
	}
	return value, nil
}

// checkLimits returns an error wrapping ErrTooLarge when a reader would
// refuse to decode the record for its counts.
func checkLimits(body *sessions.Record) error {
	if len(body.Events) > keys.MaxArrayElements {
		return fmt.Errorf("%w: %d events, at most %d", ErrTooLarge, len(body.Events), keys.MaxArrayElements)
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
	if len(a) > keys.MaxAttributes {
		return fmt.Errorf("%w: %d attributes, at most %d", ErrTooLarge, len(a), keys.MaxAttributes)
	}
	for _, kv := range a {
		if n := arrayLen(kv.Value); n > keys.MaxArrayElements {
			return fmt.Errorf("%w: attribute %q holds %d elements, at most %d", ErrTooLarge, cutName(kv.Key), n, keys.MaxArrayElements)
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
