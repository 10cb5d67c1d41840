package sessions

// The codec's decoding half, for the fuzz targets and round-trip tests.
var (
	DecodeRecord  = decodeRecord
	DecodeSession = decodeSession
)

// DecodeBudget is what decoding a value of n bytes may allocate.
var DecodeBudget = budget

// WalkBudget walks a value as checkBudget does, whatever its size.
var WalkBudget = walkBudget
