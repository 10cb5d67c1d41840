package sessions

import (
	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
)

// The codec's decoding half, for the fuzz targets and round-trip tests.
var (
	DecodeRecord  = decodeRecord
	DecodeSession = decodeSession
	DecodeOwn     = decodeOwn
)

// DecodeRecordPlain decodes a record value with the library alone, through
// Record's own fields, tags and CBOR methods: the reference the one-pass
// wire struct of decodeRecord must agree with.
func DecodeRecordPlain(b []byte) (Stamped[Record], error) {
	var v struct {
		Stamp  Stamp  `cbor:"stamp"`
		Record Record `cbor:"record"`
	}
	err := decMode.Unmarshal(b, &v)
	return Stamped[Record]{Stamp: v.Stamp, Record: v.Record}, err
}

// EncodeRecordPlain is DecodeRecordPlain's encoding half.
func EncodeRecordPlain(v Stamped[Record]) ([]byte, error) {
	return encMode.Marshal(struct {
		Stamp  Stamp  `cbor:"stamp"`
		Record Record `cbor:"record"`
	}{v.Stamp, v.Record})
}

// DecodeBudget is what decoding a value of n bytes may allocate.
var DecodeBudget = cw.Budget

// WalkBudget walks a value as checkBudget does, whatever its size.
var WalkBudget = cw.WalkBudget
