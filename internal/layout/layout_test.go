// Package layout checks that imports flow one way between the packages of
// the module, as SPEC §6 lays them out: the model knows no database and no
// OpenTelemetry, the store knows no OpenTelemetry, the bridge knows no
// database, and the readers of Badger's files (internal/badgerfmt) know
// Badger and nothing of the store that calls them.
package layout

import (
	"os/exec"
	"strings"
	"testing"
)

func TestImportsFlowOneWay(t *testing.T) {
	const otel, badger = "go.opentelemetry.io/", "github.com/dgraph-io/badger"
	const mod = "github.com/otelrecords/otelrecords/"
	badgerfmt := []string{otel, mod + "sessions", mod + "badgerstore", mod + "spanbridge", mod + "exporter"}
	forbidden := map[string][]string{
		"sessions":    {otel, badger, "github.com/otelrecords/otelrecords/badgerstore", "github.com/otelrecords/otelrecords/spanbridge", "github.com/otelrecords/otelrecords/exporter"},
		"badgerstore": {otel, "github.com/otelrecords/otelrecords/spanbridge", "github.com/otelrecords/otelrecords/exporter"},
		"spanbridge":  {badger, "github.com/otelrecords/otelrecords/badgerstore", "github.com/otelrecords/otelrecords/exporter"},
		// The answers are read through the public sessions API alone, so a
		// program that asks them pulls in no OpenTelemetry and no database.
		"explain": {otel, badger, "github.com/otelrecords/otelrecords/badgerstore", "github.com/otelrecords/otelrecords/spanbridge", "github.com/otelrecords/otelrecords/exporter", "github.com/otelrecords/otelrecords/replay", "github.com/otelrecords/otelrecords/internal/"},
		// The key layout is a leaf: every side of the store shares it.
		"internal/keys": {otel, badger, "github.com/otelrecords/otelrecords/"},
		// The retention rules are the model's, not OpenTelemetry's or Badger's.
		"internal/recorder": {otel, badger, "github.com/otelrecords/otelrecords/badgerstore", "github.com/otelrecords/otelrecords/spanbridge", "github.com/otelrecords/otelrecords/exporter"},

		"internal/badgerfmt":               badgerfmt,
		"internal/badgerfmt/badgerfmttest": badgerfmt,
		// Waiting is a leaf: it knows time, not what it waits for.
		"internal/backoff": {otel, badger, "github.com/otelrecords/otelrecords/"},
		// The waiting marker is a leaf too: files and tokens.
		"internal/turns": {otel, badger, "github.com/otelrecords/otelrecords/"},
		// The shared writer is the store's: it waits for Badger through
		// badgerstore, and knows nothing of spans.
		"internal/sharedstore": {otel, badger, "github.com/otelrecords/otelrecords/spanbridge", "github.com/otelrecords/otelrecords/exporter"},
		// The spool's format sits between the writer that fills it and the
		// opener that merges it, beneath both: it knows neither Badger nor
		// its stores.
		"internal/spool": {otel, badger, "github.com/otelrecords/otelrecords/badgerstore", "github.com/otelrecords/otelrecords/internal/", "github.com/otelrecords/otelrecords/spanbridge", "github.com/otelrecords/otelrecords/exporter"},
		// How a store's files are opened as untrusted input is a leaf
		// beneath everything that opens them.
		"internal/storefs": {otel, badger, "github.com/otelrecords/otelrecords/"},
	}
	// The exceptions to the rules above: the spool and the marker open
	// their files through internal/storefs.
	allowed := map[string]string{
		"internal/spool": mod + "internal/storefs",
		"internal/turns": mod + "internal/storefs",
	}
	for pkg, bad := range forbidden {
		// Direct imports only: Badger itself imports the otel API, which is
		// its business, not ours.
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "github.com/otelrecords/otelrecords/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, imp := range strings.Fields(string(out)) {
			if imp == allowed[pkg] {
				continue
			}
			for _, b := range bad {
				if strings.HasPrefix(imp, b) {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	}
}
