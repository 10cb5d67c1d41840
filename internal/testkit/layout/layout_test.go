// Package layout checks that imports flow one way between the packages of
// the repository. Every package is declared in one layer (layers below); a
// package may import only packages of a lower layer, never one beside it or
// above it, and there is no list of exceptions. Each layer also says which
// outside worlds it may know: the model knows no database and no
// OpenTelemetry, the store knows no OpenTelemetry, the bridge knows no
// database. A package that is not declared fails the test, so a new package
// is placed on purpose. It also checks the line between the two modules:
// the library's go.mod requires nothing that only the records command or
// its tests need. docs/ARCHITECTURE.md draws the same layers; its package
// table is checked against go list here too. And it keeps rooms small: no
// file over 600 lines, no package over 3,000.
package layout

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const lib = "github.com/otelrecords/otelrecords/"

// dirOf is where the go command runs for a package of the library (the
// root), of the records command or of the Collector component (modules of
// their own, which the library's module reaches only through go.work, and
// not at all with GOWORK=off), or of the peers' benchmark (bench/peers, a
// module outside go.work: see outsideWork).
func dirOf(pkg string) string {
	for _, mod := range []string{"cmd/records", "collector", outsideWork} {
		if pkg == mod || strings.HasPrefix(pkg, mod+"/") {
			return "../../../" + mod
		}
	}
	return "../../.."
}

// modules are the directories of the repository's modules, one package of
// each.
var modules = []string{dirOf(""), dirOf("cmd/records"), dirOf("collector"), dirOf(outsideWork)}

// outsideWork is the module go.work leaves out, so that its dependencies
// (the contrib Collector components) stay out of the workspace: the go
// command runs there with GOWORK=off.
const outsideWork = "bench/peers"

// goCmd runs the go command in dir and returns its standard output.
func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if dir == dirOf(outsideWork) {
		cmd.Env = append(os.Environ(), "GOWORK=off")
	}
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

const (
	otel   = "go.opentelemetry.io/"
	badger = "github.com/dgraph-io/badger"
)

// layer is one step of the house, bottom first. A package imports only
// packages of layers with a lower rank; two layers of one rank (the store
// and the bridge; writing and reading) are siblings that never import each
// other.
type layer struct {
	name     string
	rank     int
	packages []string // import paths below the module, a trailing /... for a folder
	outside  []string // prefixes of outside imports this layer must not have
}

var layers = []layer{
	{"ground", 0, []string{"internal/ground/..."}, []string{otel, badger}},
	{"model", 1, []string{"sessions"}, []string{otel, badger}},
	// What kept sessions let go, counted: beside the model, read through
	// its reader.
	{"tallies", 2, []string{"tallies"}, []string{otel, badger}},
	// The one table of the metrics both entry points publish: names,
	// units, meanings and the Stats fields they read, over the metric API;
	// public, so that the Collector's module (which uses the public API
	// alone) registers it as the SDK's exporter does.
	{"instruments", 1, []string{"instruments"}, []string{badger}},
	// Badger's own file formats, read without its database code: beneath
	// every other room of the store, which all may read them.
	{"badger files", 1, []string{"internal/store/badgerfmt"}, []string{otel}},
	{"store files", 2, []string{"internal/store/spool", "internal/store/turns", "internal/store/chunk", "internal/store/space", "internal/store/storedir"}, []string{otel}},
	{"store", 3, []string{"badgerstore"}, []string{otel}},
	// The forensics of a damaged store, outside the store's main room (as
	// bbolt keeps its surgeon), above it: they build the recovered store
	// through it.
	{"forensics", 4, []string{"badgerstore/doctor"}, []string{otel}},
	{"bridge", 3, []string{"spanbridge"}, []string{badger}},
	// What retention lets go, counted: beneath the Recorder, which
	// counts where it decides.
	{"tally", 3, []string{"internal/write/tally"}, []string{otel, badger}},
	{"retention", 4, []string{"internal/write/recorder"}, []string{otel, badger}},
	{"write path", 5, []string{"internal/write/sharedstore", "internal/write/forward", "internal/write/intake"}, []string{badger}},
	// The Importer's own rooms, beneath it: what it remembers of the spans
	// it took, what it writes ahead, how it reads a sender's clock.
	{"import rooms", 5, []string{"importer/internal/..."}, []string{badger}},
	// The rules the answers share, each a room of its own beneath them.
	{"reading rules", 4, []string{"explain/internal/..."}, []string{otel, badger}},
	{"reading", 5, []string{"explain", "replay", "pull", "explain/tallied"}, []string{badger}},
	// What a reader shows of a store, composed of the answers: sessions
	// summed up and laid out for a page, and written as trace files.
	{"views", 6, []string{"explain/summary", "tracefile"}, []string{badger}},
	{"entry points", 6, []string{"exporter", "importer"}, nil},
	// The records command's parts: its text, its JSON, and its reading of
	// the OTLP environment; and above them, using its text, its rooms: the
	// HTML report, and how it opens and follows stores.
	{"command parts", 7, []string{"cmd/records/internal/..."}, []string{badger}},
	{"command rooms", 8, []string{"cmd/records/internal/report", "cmd/records/internal/stores", "cmd/records/internal/views"}, []string{badger}},
	// The web app: the rooms' pages and stores, served.
	{"web app", 9, []string{"cmd/records/internal/serve"}, []string{badger}},
	// Tests' and benchmarks' helpers may stand on everything beneath;
	// only tests and programs import them (TestTestSupportOnlyInTests).
	{"test kits", 7, []string{"internal/testkit/...", "sessions/sessionstest", "internal/store/badgerfmt/badgerfmttest", "bench", "bench/internal/...", "bench/peers", "collector/internal/..."}, nil},
	// The Collector's exporter: its own module, a user of the Importer.
	{"components", 7, []string{"collector"}, []string{badger}},
	// Programs: the example a user copies, the records command, the
	// benchmark commands and the Collector distribution.
	{"programs", 10, []string{"examples/otel", "cmd/records", "bench/cmd/...", "bench/peers/cmd/...", "collector/cmd/..."}, nil},
}

// extra rules a layer's outside list cannot say.
var forbidden = map[string][]string{
	// The answers are read through the public sessions API alone, so a
	// program that asks them pulls in no OpenTelemetry and no database.
	"explain": {otel, lib + "internal/"},
	// A reader: it reaches the store through badgerstore and has no
	// business with the write side.
	"cmd/records": {badger, lib + "exporter", lib + "importer", lib + "internal/write/"},
	// A module of its own that Go would let reach the library's internal
	// packages (its path is below the library's): it uses the public API
	// alone, as a component written elsewhere would.
	"collector": {lib + "internal/"},
}

// forbiddenFor returns the extra rules of pkg: its own, and those of the
// packages it lies under (cmd/records' rooms keep the command's rules).
func forbiddenFor(pkg string) []string {
	var bad []string
	for p, rules := range forbidden {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			bad = append(bad, rules...)
		}
	}
	return bad
}

// layerOf finds the layer a package is declared in; the most specific
// declaration wins (badgerfmttest sits in the test kits, though its parent
// is a store file).
func layerOf(pkg string) (layer, bool) {
	var best layer
	bestLen := -1
	for _, l := range layers {
		for _, p := range l.packages {
			match := pkg == p
			if rest, ok := strings.CutSuffix(p, "/..."); ok {
				match = pkg == rest || strings.HasPrefix(pkg, rest+"/")
				p = rest
			}
			if match && len(p) > bestLen {
				best, bestLen = l, len(p)
			}
		}
	}
	return best, bestLen >= 0
}

// allPackages lists every package of every module with its direct imports
// (tests' imports left out: a test may reach anything).
func allPackages(t *testing.T) map[string][]string {
	pkgs := map[string][]string{}
	for _, dir := range modules {
		out := goCmd(t, dir, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			pkgs[strings.TrimPrefix(f[0], lib)] = f[1:]
		}
	}
	return pkgs
}

func TestImportsPointDown(t *testing.T) {
	pkgs := allPackages(t)
	for pkg, imports := range pkgs {
		l, ok := layerOf(pkg)
		if !ok {
			t.Errorf("%s is in no layer: declare it in layout_test.go and docs/ARCHITECTURE.md", pkg)
			continue
		}
		for _, imp := range imports {
			if own, ok := strings.CutPrefix(imp, lib); ok {
				il, ok := layerOf(own)
				if !ok {
					continue // reported as its own package above
				}
				if il.rank >= l.rank {
					t.Errorf("%s (%s, layer %d) imports %s (%s, layer %d): imports must point down", pkg, l.name, l.rank, own, il.name, il.rank)
				}
			}
			for _, bad := range append(slices.Clone(l.outside), forbiddenFor(pkg)...) {
				if strings.HasPrefix(imp, bad) {
					t.Errorf("%s (%s) imports %s", pkg, l.name, imp)
				}
			}
		}
	}
}

// TestArchitectureListsEveryPackage keeps docs/ARCHITECTURE.md's package
// table true: every package of both modules is listed, in the layer the
// layout test declares, and nothing listed is gone.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	// Rows of the table: | `package` | layer | ...
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9/._-]+)` \\| ([a-z ]+) \\|")
	listed := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = strings.TrimSpace(m[2])
	}
	pkgs := allPackages(t)
	var missing []string
	for pkg := range pkgs {
		name, ok := listed[pkg]
		if !ok {
			missing = append(missing, pkg)
			continue
		}
		if l, ok := layerOf(pkg); ok && l.name != name {
			t.Errorf("docs/ARCHITECTURE.md puts %s in layer %q; layout_test.go in %q", pkg, name, l.name)
		}
	}
	sort.Strings(missing)
	for _, pkg := range missing {
		t.Errorf("docs/ARCHITECTURE.md does not list package %s", pkg)
	}
	for pkg := range listed {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which is not a package", pkg)
		}
	}
	if len(listed) == 0 {
		t.Fatal("docs/ARCHITECTURE.md has no package table")
	}
}

// TestTestSupportOnlyInTests keeps internal/testkit/testsupport out of every
// program and library: it is for _test.go files (go list's Imports leave
// those out), in both modules.
func TestTestSupportOnlyInTests(t *testing.T) {
	const support = lib + "internal/testkit/testsupport"
	for _, dir := range modules {
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
		"go.opentelemetry.io/collector",           // the Collector, for collector/
	}
	var mod struct {
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(goCmd(t, "../../..", "mod", "edit", "-json", "go.mod"), &mod); err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Require {
		for _, f := range forbidden {
			if r.Path == f || strings.HasPrefix(r.Path, f+"/") {
				t.Errorf("go.mod requires %s: a dependency of cmd/records or collector belongs to their go.mod", r.Path)
			}
		}
	}
}

// TestNoFileOverSixHundredLines keeps every non-test Go file of both
// modules small enough to hold in a head: past 600 lines a file holds more
// than one responsibility, and is split by concept, a file for each.
func TestNoFileOverSixHundredLines(t *testing.T) {
	const limit = 600
	for _, f := range sourceFiles(t) {
		if f.lines > limit {
			t.Errorf("%s has %d lines (at most %d): split it by concept", f.path, f.lines, limit)
		}
	}
}

// TestNoPackageOverThreeThousandLines keeps every package of every module
// one room: past 3,000 non-test lines (generated files aside) a package
// holds more than one concept, and the next one goes into a package of
// its own. The cap on files alone let growth go into more files of the
// same package (issue 45).
func TestNoPackageOverThreeThousandLines(t *testing.T) {
	const limit = 3000
	lines := map[string]int{} // a package's directory, from the root: its non-test lines
	for _, f := range sourceFiles(t) {
		if !f.generated {
			lines[filepath.ToSlash(filepath.Dir(f.path))] += f.lines
		}
	}
	for dir, n := range lines {
		ceiling, over := knownOver[dir]
		switch {
		case !over && n > limit:
			t.Errorf("package %s has %d non-test lines (at most %d): put its next concept in a package of its own", dir, n, limit)
		case over && n > ceiling:
			t.Errorf("package %s has %d non-test lines, more than the %d it had when the budget came (at most %d): it may only shrink", dir, n, ceiling, limit)
		case over && n <= limit:
			t.Errorf("package %s is within the budget (%d non-test lines, at most %d): remove it from knownOver", dir, n, limit)
		}
	}
	for dir := range knownOver {
		if _, ok := lines[dir]; !ok {
			t.Errorf("knownOver names %s, which holds no Go file: remove it", dir)
		}
	}
}

// knownOver are the packages over the budget, each with the lines it had
// when the budget came: a ceiling that may only shrink. The test fails
// once one is within the budget, for its entry to go. None is now:
// exporter (5,873 lines) went when the Importer moved out of it (issue
// 45).
var knownOver = map[string]int{}

// A sourceFile is a non-test Go file of the repository.
type sourceFile struct {
	path      string // from the repository's root
	lines     int
	generated bool // "// Code generated ... DO NOT EDIT." before its package clause
}

// generatedHeader is the line the go command's convention marks a
// generated file with.
var generatedHeader = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// sourceFiles returns every non-test Go file of every module, testdata
// left out.
func sourceFiles(t *testing.T) []sourceFile {
	t.Helper()
	root := "../../.."
	var files []sourceFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		header, _, found := bytes.Cut(b, []byte("\npackage "))
		if !found || bytes.HasPrefix(b, []byte("package ")) {
			header = nil
		}
		files = append(files, sourceFile{path: rel, lines: bytes.Count(b, []byte("\n")), generated: generatedHeader.Match(header)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
