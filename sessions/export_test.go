package sessions

// The codec's decoding half, for the fuzz targets and round-trip tests.
var (
	DecodeRecord  = decodeRecord
	DecodeSession = decodeSession
)
