// Package env is the one place otelrecords reads its environment: the
// variables an operator sets to configure a program they did not write
// (OTELRECORDS_LEVEL=off, say). Options in code win; a value that does not
// parse, or is out of range, is reported and ignored — never taken as
// something destructive (a negative count of sessions to keep must not
// prune every other session).
package env

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The variables, documented in the README.
const (
	// Level sets the level: off, basic or full.
	Level = "OTELRECORDS_LEVEL"
	// KeepSessions sets how many sessions a store keeps (at least 1; 0
	// is refused, not taken as 1, which would delete every other session).
	KeepSessions = "OTELRECORDS_KEEP_SESSIONS"
	// PendingBudget sets the pending budget, a size (0 holds nothing; else
	// at least MinPendingBudget).
	PendingBudget = "OTELRECORDS_PENDING_BUDGET"
	// Dir sets the default store directory.
	Dir = "OTELRECORDS_DIR"
	// Label sets the session label.
	Label = "OTELRECORDS_LABEL"
	// Marks sets the marks policy: all, enclosing or none.
	Marks = "OTELRECORDS_MARKS"
	// MaxBytes bounds the store's size, a size of at least MinMaxBytes.
	MaxBytes = "OTELRECORDS_MAX_BYTES"
	// KeepBy sets what a change keeps: session or trace.
	KeepBy = "OTELRECORDS_KEEP_BY"
)

// Lookup returns the value of a variable, trimmed, and whether it is set
// to something other than blanks.
func Lookup(name string) (string, bool) {
	v, ok := os.LookupEnv(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// Int returns the integer a variable holds, and whether it holds one of at
// least min. A value that is set but not such an integer is reported and
// ignored.
func Int(name string, min int, report func(error)) (int, bool) {
	v, ok := Lookup(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		report(fmt.Errorf("otelrecords: %s=%q is not an integer (want one of at least %d); ignored", name, v, min))
		return 0, false
	case n < min:
		report(fmt.Errorf("otelrecords: %s=%d is below %d, the least it takes; ignored", name, n, min))
		return 0, false
	}
	return n, true
}
