package intake

import (
	"fmt"
	"math"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/env"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// DefaultLevel is the level when neither an option nor OTELRECORDS_LEVEL
// sets one: every record, without heavy parts.
const DefaultLevel = sessions.LevelBasic

// Config is the policy both entry points take from their options and the
// environment: the level, how many sessions a store keeps, the pending
// budget, the label, the marks policy, what a change keeps, the store's
// byte bound, a store in place of a directory and a clock. A nil field
// was not set; Recorder and MarksPolicy apply the defaults.
type Config struct {
	Level        *sessions.Level
	KeepSessions *int
	Budget       *int // recorder.Config.PendingBudget's convention: negative holds nothing
	Label        *string
	Marks        *Marks
	KeepBy       *KeepBy
	MaxBytes     *int64
	Store        sessions.Store
	Now          func() time.Time
}

// SetKeepSessions keeps the newest n sessions (at least 1).
func (c *Config) SetKeepSessions(n int) {
	n = max(n, 1)
	c.KeepSessions = &n
}

// SetPendingBudget sets the pending budget in bytes; 0 or less holds
// nothing.
func (c *Config) SetPendingBudget(bytes int) {
	b := bytes
	if b <= 0 {
		b = -1 // recorder.Config: negative holds nothing, 0 is the default
	}
	c.Budget = &b
}

// FromEnv fills what the options left unset from the environment. A value
// that does not parse is reported and ignored, never fatal: a typo in an
// operator's variable must not stop the program.
func (c *Config) FromEnv(report func(error)) {
	if v, ok := env.Lookup(env.Level); ok && c.Level == nil {
		if l, err := sessions.ParseLevel(v); err != nil {
			report(fmt.Errorf("%s=%q: %w; ignored (level %s)", env.Level, v, err, DefaultLevel))
		} else {
			c.Level = &l
		}
	}
	if c.KeepSessions == nil {
		if n, ok := env.Int(env.KeepSessions, 1, report); ok {
			c.SetKeepSessions(n)
		}
	}
	if c.Budget == nil {
		if n, ok := env.Size(env.PendingBudget, env.MinPendingBudget, true, report); ok {
			c.SetPendingBudget(int(min(n, math.MaxInt)))
		}
	}
	if v, ok := env.Lookup(env.Label); ok && c.Label == nil {
		c.Label = &v
	}
	if c.MaxBytes == nil {
		if n, ok := env.Size(env.MaxBytes, env.MinMaxBytes, false, report); ok {
			c.MaxBytes = &n
		}
	}
	if v, ok := env.Lookup(env.KeepBy); ok && c.KeepBy == nil {
		if k, err := ParseKeepBy(v); err != nil {
			report(fmt.Errorf("%s=%q: %w; ignored (keep by %s)", env.KeepBy, v, err, DefaultKeepBy))
		} else {
			c.KeepBy = &k
		}
	}
	if v, ok := env.Lookup(env.Marks); ok && c.Marks == nil {
		if m, err := ParseMarks(v); err != nil {
			report(fmt.Errorf("%s=%q: %w; ignored (marks %s)", env.Marks, v, err, DefaultMarks))
		} else {
			c.Marks = &m
		}
	}
}

// Recorder is what the policy says of a session's Recorder: its level
// (DefaultLevel when unset), how many sessions the store keeps, the
// pending budget, the label, the store's byte bound and what a change
// keeps. The SpanProcessor and the Importer's sessions both start from it.
func (c *Config) Recorder() recorder.Config {
	cfg := recorder.Config{Level: DefaultLevel}
	if c.Level != nil {
		cfg.Level = *c.Level
	}
	if c.KeepSessions != nil {
		cfg.KeepSessions = *c.KeepSessions
	}
	if c.Budget != nil {
		cfg.PendingBudget = *c.Budget
	}
	if c.Label != nil {
		cfg.Label = *c.Label
	}
	if c.MaxBytes != nil {
		cfg.MaxBytes = *c.MaxBytes
	}
	if c.KeepBy != nil && *c.KeepBy == KeepByTrace {
		cfg.KeepBy = recorder.KeepByTrace
	}
	return cfg
}

// MarksPolicy is the marks policy set, DefaultMarks when unset.
func (c *Config) MarksPolicy() Marks {
	if c.Marks != nil {
		return *c.Marks
	}
	return DefaultMarks
}
