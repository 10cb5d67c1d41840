package explain_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The answers are read through the public sessions API alone: a program
// that asks them pulls in no OpenTelemetry, no database and no command,
// and the CLI can live in a module of its own (SPEC §6). This belongs with
// internal/layout's test once the package is merged.
func TestExplainImportsOnlySessions(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/otelrecords/otelrecords/explain").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/otelrecords/otelrecords/"
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"go.opentelemetry.io/", "github.com/dgraph-io/", mod + "cmd", mod + "exporter", mod + "badgerstore", mod + "spanbridge", mod + "replay"} {
			if strings.HasPrefix(dep, bad) {
				t.Errorf("explain depends on %s", dep)
			}
		}
	}
}
