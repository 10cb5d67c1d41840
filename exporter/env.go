package exporter

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/otelrecords/otelrecords/sessions"
)

// The environment variables an operator sets; options in code win.
const (
	// EnvLevel sets the level: off, basic or full.
	EnvLevel = "OTELRECORDS_LEVEL"
	// EnvKeepSessions sets how many sessions a store keeps.
	EnvKeepSessions = "OTELRECORDS_KEEP_SESSIONS"
	// EnvPendingBudget sets the pending budget in bytes.
	EnvPendingBudget = "OTELRECORDS_PENDING_BUDGET"
	// EnvDir sets the store directory used when New is given "".
	EnvDir = "OTELRECORDS_DIR"
	// EnvLabel sets the session label.
	EnvLabel = "OTELRECORDS_LABEL"
)

// fromEnv fills what the options left unset from the environment. A value
// that does not parse is reported and ignored, never fatal: a typo in an
// operator's variable must not stop the program.
func (c *config) fromEnv(report func(error)) {
	if v, ok := lookup(EnvLevel); ok && c.level == nil {
		if l, err := sessions.ParseLevel(v); err != nil {
			report(fmt.Errorf("%s: %w", EnvLevel, err))
		} else {
			c.level = &l
		}
	}
	if v, ok := lookup(EnvKeepSessions); ok && c.keepSessions == nil {
		if n, err := strconv.Atoi(v); err != nil {
			report(fmt.Errorf("otelrecords: %s=%q is not an integer; ignored", EnvKeepSessions, v))
		} else {
			WithKeepSessions(n)(c)
		}
	}
	if v, ok := lookup(EnvPendingBudget); ok && c.budget == nil {
		if n, err := strconv.Atoi(v); err != nil {
			report(fmt.Errorf("otelrecords: %s=%q is not an integer; ignored", EnvPendingBudget, v))
		} else {
			WithPendingBudget(n)(c)
		}
	}
	if v, ok := lookup(EnvLabel); ok && c.label == nil {
		c.label = &v
	}
}

func lookup(name string) (string, bool) {
	v, ok := os.LookupEnv(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}
