package intake

import "fmt"

// KeepBy is what a change keeps: the whole session, or the one request
// (trace) that made it. The entry points export it as exporter.KeepBy and
// importer.KeepBy, where it is documented.
type KeepBy uint8

// The retention units (exporter.KeepBySession, KeepByTrace).
const (
	KeepBySession KeepBy = iota
	KeepByTrace
)

// DefaultKeepBy is what a change keeps when neither an option nor
// OTELRECORDS_KEEP_BY says.
const DefaultKeepBy = KeepBySession

// String returns the unit's name, as OTELRECORDS_KEEP_BY takes it.
func (k KeepBy) String() string {
	if int(k) < len(keepByNames) {
		return keepByNames[k]
	}
	return fmt.Sprintf("KeepBy(%d)", uint8(k))
}

var keepByNames = [...]string{KeepBySession: "session", KeepByTrace: "trace"}

// ParseKeepBy parses a retention unit by name: session or trace, in any
// case.
func ParseKeepBy(s string) (KeepBy, error) {
	if k, ok := parseName(s, KeepBySession, KeepByTrace); ok {
		return k, nil
	}
	return 0, fmt.Errorf("otelrecords: unknown keep-by unit %q (want session or trace)", s)
}
