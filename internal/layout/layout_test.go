// Package layout checks that imports flow one way between the packages of
// the repository, as SPEC §6 lays them out: the model knows no database and
// no OpenTelemetry, the store knows no OpenTelemetry, the bridge knows no
// database, the readers of Badger's files (internal/badgerfmt) know Badger
// and nothing of the store that calls them, the records command reads
// through the library, and only tests
// import internal/testsupport. It also checks the line between the two
// modules: the library's go.mod requires nothing that only the records
// command or its tests need.
package layout

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const lib = "github.com/otelrecords/otelrecords/"

// dirOf is where the go command runs for a package of the library (the
// root) or of the records command (a module of its own, which the library's
// module reaches only through go.work, and not at all with GOWORK=off).
func dirOf(pkg string) string {
	if pkg == "cmd/records" || strings.HasPrefix(pkg, "cmd/records/") {
		return "../../cmd/records"
	}
	return "../.."
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return out
}

func TestImportsFlowOneWay(t *testing.T) {
	const otel, badger = "go.opentelemetry.io/", "github.com/dgraph-io/badger"
	badgerfmt := []string{otel, lib + "sessions", lib + "badgerstore", lib + "spanbridge", lib + "exporter"}
	forbidden := map[string][]string{
		"sessions":    {otel, badger, lib + "badgerstore", lib + "spanbridge", lib + "exporter"},
		"badgerstore": {otel, lib + "spanbridge", lib + "exporter"},
		"spanbridge":  {badger, lib + "badgerstore", lib + "exporter"},
		// A reader: it reaches the store through badgerstore and has no
		// business with the write side.
		"cmd/records": {badger, lib + "exporter"},
		// The answers are read through the public sessions API alone, so a
		// program that asks them pulls in no OpenTelemetry and no database.
		"explain": {otel, badger, lib + "badgerstore", lib + "spanbridge", lib + "exporter", lib + "replay", lib + "internal/"},
		// The key layout is a leaf: every side of the store shares it.
		"internal/keys": {otel, badger, lib},
		// The retention rules are the model's, not OpenTelemetry's or Badger's.
		"internal/recorder": {otel, badger, lib + "badgerstore", lib + "spanbridge", lib + "exporter"},

		"internal/badgerfmt":               badgerfmt,
		"internal/badgerfmt/badgerfmttest": badgerfmt,
		// Waiting is a leaf: it knows time, not what it waits for.
		"internal/backoff": {otel, badger, lib},
		// The waiting marker is a leaf too: files and tokens.
		"internal/turns": {otel, badger, lib},
		// The shared writer is the store's: it waits for Badger through
		// badgerstore, and knows nothing of spans.
		"internal/sharedstore": {otel, badger, lib + "spanbridge", lib + "exporter"},
		// The spool's format sits between the writer that fills it and the
		// opener that merges it, beneath both: it knows neither Badger nor
		// its stores.
		"internal/spool": {otel, badger, lib + "badgerstore", lib + "internal/", lib + "spanbridge", lib + "exporter"},
		// How a store's files are opened as untrusted input is a leaf
		// beneath everything that opens them.
		"internal/storefs": {otel, badger, lib},
	}
	// The exceptions to the rules above: the spool and the marker open
	// their files through internal/storefs.
	allowed := map[string]string{
		"internal/spool": lib + "internal/storefs",
		"internal/turns": lib + "internal/storefs",
	}
	for pkg, bad := range forbidden {
		// Direct imports only: Badger itself imports the otel API, which is
		// its business, not ours.
		out := goCmd(t, dirOf(pkg), "list", "-f", `{{join .Imports "\n"}}`, lib+pkg)
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

// TestTestSupportOnlyInTests keeps internal/testsupport out of every
// program and library: it is for _test.go files (go list's Imports leave
// those out), in both modules.
func TestTestSupportOnlyInTests(t *testing.T) {
	const support = lib + "internal/testsupport"
	for _, dir := range []string{dirOf(""), dirOf("cmd/records")} {
		out := goCmd(t, dir, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
		for line := range strings.Lines(string(out)) {
			pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
			if slices.Contains(strings.Fields(imports), support) {
				t.Errorf("%s imports %s, which only tests may", pkg, support)
			}
		}
	}
}

// TestLibraryModuleRequiresNoCommandDependency keeps the CLI's and its
// tests' dependencies out of the go.mod every user of the library builds
// with: they belong to cmd/records/go.mod.
func TestLibraryModuleRequiresNoCommandDependency(t *testing.T) {
	forbidden := []string{
		"github.com/spf13/cobra",                  // the command line
		"github.com/chromedp",                     // the report's browser test
		"google.golang.org/grpc",                  // OTLP over gRPC, for export and replay
		"go.opentelemetry.io/otel/exporters/otlp", // the OTLP exporters
	}
	var mod struct {
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(goCmd(t, "../..", "mod", "edit", "-json", "go.mod"), &mod); err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Require {
		for _, f := range forbidden {
			if r.Path == f || strings.HasPrefix(r.Path, f+"/") {
				t.Errorf("go.mod requires %s: a dependency of cmd/records belongs to cmd/records/go.mod", r.Path)
			}
		}
	}
}
