package env

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The smallest sizes a variable takes, in bytes. A bare number below them
// is a unit left off (OTELRECORDS_MAX_BYTES=64 meant 64MiB and would trim
// every other session away), so it is reported and ignored, and the safe
// default stays: no bound, the default budget.
const (
	// MinMaxBytes is the smallest OTELRECORDS_MAX_BYTES: 1 MiB, the
	// largest session row a writer writes.
	MinMaxBytes = 1 << 20
	// MinPendingBudget is the smallest OTELRECORDS_PENDING_BUDGET but 0
	// (which holds nothing, on purpose): 64 KiB.
	MinPendingBudget = 64 << 10
)

// SizeUnits names the units a size takes, for messages and the README.
const SizeUnits = "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), any case"

// units maps a unit, in lower case, to its bytes.
var units = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses a size: a whole or decimal number and an optional unit
// (SizeUnits; a lone k, m, g or t is a power of 1024), spaces allowed
// between: "64MiB", "1.5 GB", "1048576".
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("not a size (want a number and a unit: 64MiB, 1GB)")
	}
	mult, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (want %s)", strings.TrimSpace(s[i:]), SizeUnits)
	}
	n := f * float64(mult)
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

// Size returns the size in bytes a variable holds, and whether it holds
// one: 0 when zero is allowed (a budget that holds nothing), or at least
// min. Anything else set — not a size, a negative one, or one below min —
// is reported, naming the variable and what it takes, and ignored.
func Size(name string, min int64, zero bool, report func(error)) (int64, bool) {
	v, ok := Lookup(name)
	if !ok {
		return 0, false
	}
	n, err := ParseSize(v)
	switch {
	case err != nil:
		report(fmt.Errorf("otelrecords: %s=%q: %w; ignored", name, v, err))
		return 0, false
	case n == 0 && zero:
		return 0, true
	case n < min:
		report(fmt.Errorf("otelrecords: %s=%q is %d bytes, below the least it takes, %s (a size with a unit: 64MiB, 1GB); ignored", name, v, n, FormatSize(min)))
		return 0, false
	}
	return n, true
}

// FormatSize writes n bytes with the largest power-of-1024 unit that
// divides it: "1MiB", "64KiB", "100B".
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return fmt.Sprintf("%d%s", n/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
