package exporter

import (
	"fmt"

	"github.com/otelrecords/otelrecords/internal/ground/env"
	"github.com/otelrecords/otelrecords/sessions"
)

// The environment variables an operator sets; options in code win. They
// are read in one place, package internal/ground/env.
const (
	// EnvLevel sets the level: off, basic or full.
	EnvLevel = env.Level
	// EnvKeepSessions sets how many sessions a store keeps (at least 1;
	// other values are reported and ignored).
	EnvKeepSessions = env.KeepSessions
	// EnvPendingBudget sets the pending budget in bytes (0 holds nothing).
	EnvPendingBudget = env.PendingBudget
	// EnvDir sets the store directory used when New is given "".
	EnvDir = env.Dir
	// EnvLabel sets the session label.
	EnvLabel = env.Label
	// EnvMarks sets the marks policy: all, enclosing or none (see Marks).
	EnvMarks = env.Marks
	// EnvMaxBytes bounds the store's size in bytes (see WithMaxBytes; at
	// least 1: other values are reported and ignored).
	EnvMaxBytes = env.MaxBytes
	// EnvKeepBy sets what a change keeps: session or trace (see KeepBy).
	EnvKeepBy = env.KeepBy
)

// fromEnv fills what the options left unset from the environment. A value
// that does not parse is reported and ignored, never fatal: a typo in an
// operator's variable must not stop the program.
func (c *config) fromEnv(report func(error)) {
	if v, ok := env.Lookup(env.Level); ok && c.level == nil {
		if l, err := sessions.ParseLevel(v); err != nil {
			report(fmt.Errorf("%s: %w", env.Level, err))
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
		if n, ok := env.Int(env.PendingBudget, 0, report); ok {
			WithPendingBudget(n)(c)
		}
	}
	if v, ok := env.Lookup(env.Label); ok && c.label == nil {
		c.label = &v
	}
	if c.maxBytes == nil {
		if n, ok := env.Int(env.MaxBytes, 1, report); ok {
			WithMaxBytes(int64(n))(c)
		}
	}
	if v, ok := env.Lookup(env.KeepBy); ok && c.keepBy == nil {
		if k, err := ParseKeepBy(v); err != nil {
			report(fmt.Errorf("%s: %w; ignored", env.KeepBy, err))
		} else {
			c.keepBy = &k
		}
	}
	if v, ok := env.Lookup(env.Marks); ok && c.marks == nil {
		if m, err := ParseMarks(v); err != nil {
			report(fmt.Errorf("%s: %w; ignored", env.Marks, err))
		} else {
			c.marks = &m
		}
	}
}
