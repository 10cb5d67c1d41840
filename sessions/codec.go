package sessions

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Decode limits: a store is untrusted input (it travels between machines),
// so no value may make a reader allocate without bound or recurse deeply.
const (
	maxNestedLevels  = 16
	maxArrayElements = 1 << 20
	maxMapPairs      = 1 << 17
)

// MaxValueSize is the largest value a reader decodes, in bytes; larger ones
// are counted as undecodable.
const MaxValueSize = 64 << 20

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	// Core deterministic encoding: map keys sorted, shortest forms, so the
	// same record always encodes to the same bytes.
	eo := cbor.CoreDetEncOptions()
	eo.Time = cbor.TimeUnixDynamic
	if encMode, err = eo.EncMode(); err != nil {
		panic(err)
	}
	do := cbor.DecOptions{
		MaxNestedLevels:  maxNestedLevels,
		MaxArrayElements: maxArrayElements,
		MaxMapPairs:      maxMapPairs,
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthAllowed,
		IntDec:           cbor.IntDecConvertNone,
		DefaultMapType:   nil,
		UTF8:             cbor.UTF8DecodeInvalid,
	}
	if decMode, err = do.DecMode(); err != nil {
		panic(err)
	}
}

// EncodeRecord encodes a stamped record as the CBOR value stored under its
// key.
func EncodeRecord(v Stamped[Record]) ([]byte, error) { return encMode.Marshal(v) }

// DecodeRecord decodes a stored record value.
func DecodeRecord(b []byte) (Stamped[Record], error) {
	var v Stamped[Record]
	if len(b) > MaxValueSize {
		return v, fmt.Errorf("value of %d bytes exceeds %d", len(b), MaxValueSize)
	}
	err := decMode.Unmarshal(b, &v)
	return v, err
}

// EncodeSession encodes a session row.
func EncodeSession(s Session) ([]byte, error) { return encMode.Marshal(s) }

// DecodeSession decodes a stored session row.
func DecodeSession(b []byte) (Session, error) {
	var s Session
	if len(b) > MaxValueSize {
		return s, fmt.Errorf("value of %d bytes exceeds %d", len(b), MaxValueSize)
	}
	err := decMode.Unmarshal(b, &s)
	return s, err
}
