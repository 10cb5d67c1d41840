package exporter

import "github.com/otelrecords/otelrecords/internal/ground/env"

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
