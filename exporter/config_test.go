package exporter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Each variable set to something it does not take is reported once,
// naming the variable and what it takes, and the exporter goes on with
// the safe default: every session kept, the default budget, the default
// level and marks. Before, OTELRECORDS_KEEP_SESSIONS=0 was ignored where
// the README said it behaved as 1, and OTELRECORDS_PENDING_BUDGET=1 (a
// unit left off) held one byte: the records before the first change went.
func TestBadVariablesFallBackToSafeDefaults(t *testing.T) {
	cases := []struct {
		name, value string
		takes       string // what the report names as accepted
	}{
		{exporter.EnvLevel, "loud", "off, basic or full"},
		{exporter.EnvMarks, "some", "all, enclosing or none"},
		{exporter.EnvKeepBy, "request", "session or trace"},
		{exporter.EnvKeepSessions, "0", "1"},
		{exporter.EnvKeepSessions, "-5", "1"},
		{exporter.EnvKeepSessions, "many", "1"},
		{exporter.EnvPendingBudget, "1", "64KiB"},
		{exporter.EnvPendingBudget, "-1MiB", "64MiB"},
		{exporter.EnvPendingBudget, "1 parsec", "MiB"},
		{exporter.EnvMaxBytes, "64", "1MiB"},
		{exporter.EnvMaxBytes, "64XB", "MiB"},
	}
	for _, c := range cases {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			mem := sessions.NewMemStore()
			for i := range 3 {
				writeSession(t, nopClose{mem}, fmt.Sprint("old ", i), 2)
			}
			e := captureErrors(t)
			t.Setenv(c.name, c.value)
			p := newProvider(t, "", exporter.WithStore(nopClose{mem}))
			// Observed records before the first change: held, then kept.
			for i := range 5 {
				p.do(fmt.Sprint("held ", i), spanbridge.Kind("compile"))
			}
			p.do("change", spanbridge.Kind("compile"), spanbridge.Changed())
			p.shutdown(t)
			if p.exp.Level() != exporter.DefaultLevel {
				t.Errorf("level %v, want the default", p.exp.Level())
			}
			r := sessions.NewRecords(mem)
			if ss := countSessions(t, r); len(ss) != 4 {
				t.Errorf("%d sessions, want all 4 kept", len(ss))
			}
			if n := len(names(t, r, "compile")); n != 3*2+6 {
				t.Errorf("%d records, want every one of the %d", n, 3*2+6)
			}
			all := e.All()
			if len(all) != 1 || !strings.Contains(all[0].Error(), c.name) || !strings.Contains(all[0].Error(), c.takes) || !strings.Contains(all[0].Error(), "ignored") {
				t.Fatalf("reports = %v, want one naming %s and %q", all, c.name, c.takes)
			}
		})
	}
}

// Enumerations are read in any case, and sizes with any unit.
func TestVariablesInAnyCaseAndUnit(t *testing.T) {
	e := captureErrors(t)
	t.Setenv(exporter.EnvLevel, " FULL ")
	t.Setenv(exporter.EnvMarks, "None")
	t.Setenv(exporter.EnvKeepBy, "Session")
	t.Setenv(exporter.EnvMaxBytes, "64 mib")
	t.Setenv(exporter.EnvPendingBudget, "1.5GB")
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()))
	p.shutdown(t)
	if p.exp.Level() != sessions.LevelFull || len(e.All()) != 0 {
		t.Fatalf("level %v, reports %v; want full and none", p.exp.Level(), e.All())
	}
}
