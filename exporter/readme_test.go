package exporter_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/ground/env"
	"github.com/otelrecords/otelrecords/sessions"
)

// configRows returns the rows of the README's configuration table by the
// variable each names: the variable's cell and the default's.
func configRows(t *testing.T) map[string][2]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "### 4. Configure")
	if !ok {
		t.Fatal("README has no section 4. Configure")
	}
	name := regexp.MustCompile("OTELRECORDS_[A-Z_]+")
	rows := map[string][2]string{}
	for line := range strings.SplitSeq(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := regexp.MustCompile(`[^\\]\|`).Split(line, -1)
		if len(cells) < 4 {
			continue
		}
		if v := name.FindString(cells[1]); v != "" {
			rows[v] = [2]string{cells[1], strings.TrimSpace(cells[2])}
		}
	}
	return rows
}

// envNames returns the variables the code reads: the constants of package
// internal/ground/env, the one place the environment is read.
func envNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../internal/ground/env/env.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s+\w+\s+=\s+"(OTELRECORDS_[A-Z_]+)"`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// The README's table of variables says what the code does: one row for
// each variable the code reads and none other; the values it lists for
// an enumeration are those the code takes, and its defaults and least
// sizes are the code's.
func TestREADMEConfigurationTable(t *testing.T) {
	rows := configRows(t)
	names := envNames(t)
	if len(names) < 7 {
		t.Fatalf("read %d variables from env.go: %v", len(names), names)
	}
	for _, n := range names {
		if _, ok := rows[n]; !ok {
			t.Errorf("the code reads %s; the README's table has no row for it", n)
		}
	}
	for n := range rows {
		if !slices.Contains(names, n) {
			t.Errorf("the README's table names %s, which the code does not read", n)
		}
	}
	listed := func(n string) []string {
		_, vals, ok := strings.Cut(rows[n][0], n+"=")
		if !ok {
			t.Fatalf("row %s lists no values", n)
		}
		vals, _, _ = strings.Cut(vals, "`")
		return strings.Split(vals, `\|`)
	}
	// Each value the row lists parses, in upper case too, and they are
	// all the code takes.
	enum := func(n string, parse func(string) (string, error), all []string, def string) {
		var got []string
		for _, v := range listed(n) {
			p, err := parse(strings.ToUpper(v))
			if err != nil {
				t.Errorf("README lists %s=%q: %v", n, v, err)
			}
			got = append(got, p)
		}
		if slices.Sort(got); !slices.Equal(got, all) || rows[n][1] != "`"+def+"`" {
			t.Errorf("row %s lists %q with default %s; the code takes %q with default %s", n, got, rows[n][1], all, def)
		}
	}
	enum(exporter.EnvLevel, func(s string) (string, error) { l, err := sessions.ParseLevel(s); return l.String(), err },
		[]string{"basic", "full", "off"}, exporter.DefaultLevel.String())
	enum(exporter.EnvMarks, func(s string) (string, error) { m, err := exporter.ParseMarks(s); return m.String(), err },
		[]string{"all", "enclosing", "none"}, exporter.DefaultMarks.String())
	enum(exporter.EnvKeepBy, func(s string) (string, error) { k, err := exporter.ParseKeepBy(s); return k.String(), err },
		[]string{"session", "trace"}, exporter.DefaultKeepBy.String())
	for n, want := range map[string][]string{
		exporter.EnvKeepSessions:  {"at least 1", "0 is refused"},
		exporter.EnvPendingBudget: {"at least " + env.FormatSize(exporter.MinPendingBudget), "0 or"},
		exporter.EnvMaxBytes:      {"at least " + env.FormatSize(exporter.MinMaxBytes)},
	} {
		for _, w := range want {
			if !strings.Contains(rows[n][0], w) {
				t.Errorf("row %s says %q; want it to say %q", n, rows[n][0], w)
			}
		}
	}
	if d := rows[exporter.EnvPendingBudget][1]; d != env.FormatSize(exporter.DefaultPendingBudget) {
		t.Errorf("README's default pending budget %q, code's %s", d, env.FormatSize(exporter.DefaultPendingBudget))
	}
	if d := rows[exporter.EnvMaxBytes][1]; d != "no bound" || exporter.DefaultMaxBytes != 0 {
		t.Errorf("README's default max bytes %q, code's %d", d, exporter.DefaultMaxBytes)
	}
}
