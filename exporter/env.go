package exporter

import (
	"fmt"
	"math"

	"github.com/otelrecords/otelrecords/internal/ground/env"
	"github.com/otelrecords/otelrecords/sessions"
)

// The environment variables an operator sets; options in code win. They
// are read in one place, package internal/ground/env.
const (
	// EnvLevel sets the level: off, basic or full.
	EnvLevel = env.Level
	// EnvKeepSessions sets how many sessions a store keeps (at least 1;
	// other values, 0 among them, are reported and ignored: every session
	// is kept).
	EnvKeepSessions = env.KeepSessions
	// EnvPendingBudget sets the pending budget, a size with a unit
	// ("256KiB", "4MB"): 0 holds nothing, anything else is at least
	// MinPendingBudget; other values are reported and ignored.
	EnvPendingBudget = env.PendingBudget
	// EnvDir sets the store directory used when New is given "".
	EnvDir = env.Dir
	// EnvLabel sets the session label.
	EnvLabel = env.Label
	// EnvMarks sets the marks policy: all, enclosing or none (see Marks).
	EnvMarks = env.Marks
	// EnvMaxBytes bounds the store's size (see WithMaxBytes), a size with
	// a unit ("64MiB", "1GB") of at least MinMaxBytes: a bare "64" is a
	// unit left off, reported and ignored (no bound), never 64 bytes.
	EnvMaxBytes = env.MaxBytes
	// EnvKeepBy sets what a change keeps: session or trace (see KeepBy).
	EnvKeepBy = env.KeepBy
)

// The least a size variable takes, in bytes; smaller values are reported
// and ignored.
const (
	// MinMaxBytes is the smallest OTELRECORDS_MAX_BYTES: 1 MiB.
	MinMaxBytes = env.MinMaxBytes
	// MinPendingBudget is the smallest OTELRECORDS_PENDING_BUDGET but 0:
	// 64 KiB.
	MinPendingBudget = env.MinPendingBudget
)

// fromEnv fills what the options left unset from the environment. A value
// that does not parse is reported and ignored, never fatal: a typo in an
// operator's variable must not stop the program.
func (c *config) fromEnv(report func(error)) {
	if v, ok := env.Lookup(env.Level); ok && c.level == nil {
		if l, err := sessions.ParseLevel(v); err != nil {
			report(fmt.Errorf("%s=%q: %w; ignored (level %s)", env.Level, v, err, DefaultLevel))
		} else {
			c.level = &l
		}
	}
	if c.keepSessions == nil {
		if n, ok := env.Int(env.KeepSessions, 1, report); ok {
			WithKeepSessions(n)(c)
		}
	}
	if c.budget == nil {
		if n, ok := env.Size(env.PendingBudget, env.MinPendingBudget, true, report); ok {
			WithPendingBudget(int(min(n, math.MaxInt)))(c)
		}
	}
	if v, ok := env.Lookup(env.Label); ok && c.label == nil {
		c.label = &v
	}
	if c.maxBytes == nil {
		if n, ok := env.Size(env.MaxBytes, env.MinMaxBytes, false, report); ok {
			WithMaxBytes(n)(c)
		}
	}
	if v, ok := env.Lookup(env.KeepBy); ok && c.keepBy == nil {
		if k, err := ParseKeepBy(v); err != nil {
			report(fmt.Errorf("%s=%q: %w; ignored (keep by %s)", env.KeepBy, v, err, DefaultKeepBy))
		} else {
			c.keepBy = &k
		}
	}
	if v, ok := env.Lookup(env.Marks); ok && c.marks == nil {
		if m, err := ParseMarks(v); err != nil {
			report(fmt.Errorf("%s=%q: %w; ignored (marks %s)", env.Marks, v, err, DefaultMarks))
		} else {
			c.marks = &m
		}
	}
}
