package sessions

import (
	"errors"
	"fmt"
)

// MaxRecordSize is the largest record a Recorder accepts: its key and its
// encoded value together, in bytes. Badger, the store otelrecords writes
// to, takes values of up to 16 MiB (the size of its value-log files); the
// margin is for the record's key and other stores' overheads. A larger
// record is dropped when it is recorded (see ErrTooLarge).
const MaxRecordSize = 15 << 20

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
func encodeWithin(k string, st Stamp, body *Record) ([]byte, error) {
	if err := checkLimits(body); err != nil {
		return nil, err
	}
	value, err := EncodeRecord(Stamped[Record]{Stamp: st, Record: *body})
	if err != nil {
		return nil, err
	}
	if n := KeySize(k) + len(value); n > MaxRecordSize {
		return nil, fmt.Errorf("%w: %d bytes encoded, at most %d", ErrTooLarge, n, MaxRecordSize)
	}
	return value, nil
}

// checkLimits returns an error wrapping ErrTooLarge when a reader would
// refuse to decode the record for its counts.
func checkLimits(body *Record) error {
	if len(body.Events) > maxArrayElements {
		return fmt.Errorf("%w: %d events, at most %d", ErrTooLarge, len(body.Events), maxArrayElements)
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

func checkAttrLimits(a Attrs) error {
	if len(a) > maxMapPairs {
		return fmt.Errorf("%w: %d attributes, at most %d", ErrTooLarge, len(a), maxMapPairs)
	}
	for _, kv := range a {
		if n := kv.Value.arrayLen(); n > maxArrayElements {
			return fmt.Errorf("%w: attribute %q holds %d elements, at most %d", ErrTooLarge, cutName(kv.Key), n, maxArrayElements)
		}
	}
	return nil
}

// arrayLen returns how many elements an array value holds, and 0 for any
// other value.
func (v Value) arrayLen() int {
	switch x := v.v.(type) {
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
