package sessions

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SessionID names a Session: unique among the sessions of a store. It is the
// session's start in Unix nanoseconds — unique enough between processes, and
// it sorts sessions by start without a lookup.
type SessionID uint64

// String returns the id in decimal, the form the CLI prints and accepts.
func (id SessionID) String() string { return strconv.FormatUint(uint64(id), 10) }

// Session is one process's use of one store, from its first stamp to
// shutdown: what every record of it shares. It is the row written under the
// sessions namespace when the session is kept.
type Session struct {
	// ID is unique among the sessions of a store, and sorts them by start.
	ID SessionID `cbor:"id"`
	// StartedUnixMs is the wall-clock start, in milliseconds since the Unix
	// epoch.
	StartedUnixMs int64 `cbor:"started_unix_ms"`
	// Version is the version of this library that wrote the session, as
	// debug.ReadBuildInfo reports it.
	Version string `cbor:"version"`
	// Label is what the process said it was doing, e.g. "models build
	// qwen3-8b"; empty when it said nothing.
	Label string `cbor:"label,omitempty"`
	// Process is the operating system's process id.
	Process int `cbor:"process"`
	// OS is the operating system, as runtime.GOOS names it.
	OS string `cbor:"os"`
	// Arch is the CPU architecture, as runtime.GOARCH names it.
	Arch string `cbor:"arch"`
	// Resource holds the OpenTelemetry Resource attributes of the provider
	// that recorded the session (service.name, service.version, ...).
	Resource Attrs `cbor:"resource,omitzero"`
}

// Started returns the session's wall-clock start.
func (s Session) Started() time.Time { return time.Unix(0, int64(s.ID)) }

// Stamp is where a record sits in its session.
type Stamp struct {
	// Session is the ID of the session the record belongs to.
	Session SessionID `cbor:"session"`
	// Seq is the record's position among all of its session's records,
	// across every kind, from 0. Gaps are normal: a stamp taken for a span
	// whose record was later dropped leaves one.
	Seq uint64 `cbor:"seq"`
	// Offset is the time from the session's start to the record's start, on
	// a monotonic clock.
	Offset time.Duration `cbor:"offset_ns"`
}

// Stamped is a record as it is stored: its stamp, then its body. The key is
// the stamp's (session, seq), which is unique and sorts a session's records
// in the order they were stamped.
type Stamped[T any] struct {
	// Stamp is where the record sits in its session.
	Stamp Stamp `cbor:"stamp"`
	// Record is the record itself.
	Record T `cbor:"record"`
}

// Effect says whether a record accompanies a change to the store's caches.
// The zero value is Observed: recording something never keeps a session by
// accident.
type Effect uint8

const (
	// Observed marks something that changed nothing: a cache hit, a phase
	// marked, a snapshot taken. Kept only if the session changes something.
	Observed Effect = iota
	// Changed marks a change: a key tuned, an artifact compiled and stored.
	// It keeps the session, with everything held before it.
	Changed
)

// String returns "observed" or "changed", the values of the records.effect
// attribute.
func (e Effect) String() string {
	switch e {
	case Observed:
		return "observed"
	case Changed:
		return "changed"
	}
	return "Effect(" + strconv.Itoa(int(e)) + ")"
}

// Level says how much a session records.
type Level int8

const (
	// LevelOff records nothing and stamps nothing: spans pass through at
	// near-zero cost.
	LevelOff Level = iota
	// LevelBasic records every record without its heavy parts: what a build
	// cost, not the artifacts it produced. The default.
	LevelBasic
	// LevelFull records every record in full, heavy parts included (a
	// compiled kernel's source, say).
	LevelFull
)

// String returns "off", "basic" or "full".
func (l Level) String() string {
	switch l {
	case LevelOff:
		return "off"
	case LevelBasic:
		return "basic"
	case LevelFull:
		return "full"
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

// ParseLevel parses "off", "basic" or "full", in any case.
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off":
		return LevelOff, nil
	case "basic":
		return LevelBasic, nil
	case "full":
		return LevelFull, nil
	}
	return LevelBasic, fmt.Errorf("otelrecords: unknown level %q (want off, basic or full)", s)
}

// MarshalText implements encoding.TextMarshaler, so a Level reads and writes
// as its name in configuration files and flags.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
