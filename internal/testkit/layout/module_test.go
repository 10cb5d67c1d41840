package layout

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// userProgram is a program of a user's own module: it records a span that
// changed something through the exporter, then reads it back through
// sessions, as the README's tour does.
const userProgram = `package main

import (
	"context"
	"fmt"
	"log"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func main() {
	dir := os.Args[1]
	rec, err := exporter.New(dir, exporter.WithLabel("my build"))
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("mybuild").Start(context.Background(), "compile matmul",
		spanbridge.Record("compile", spanbridge.Changed())...)
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	r := sessions.NewRecords(st)
	for rec, err := range r.All("compile") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(rec.Record.Name)
	}
	s, ok, err := r.Newest()
	if err != nil || !ok {
		log.Fatal("no session: ", err)
	}
	fmt.Println(s.Label, s.Version)
}
`

// TestUserModuleBuildsAgainstAClone does what the README's "Using it from
// your module" says, in a module of its own outside this repository: a
// replace line naming this clone, go mod tidy, and the program builds,
// passes go vet and records. The module is not published yet, so this is
// how anyone depends on it; a file the library forgets to export, a
// dependency only go.work supplies or an internal import in an example
// the README gives would fail here.
//
// The module is a new user's: nothing in it comes from this repository's
// go.sum or from what the module cache happens to hold. go mod tidy asks
// the module proxy of the user's go env for what the cache lacks — on a
// fresh machine that includes test dependencies of the library's
// dependencies (ristretto's go-farm), whose go.mod files tidy reads — and
// the test skips, saying so, when the proxy cannot be reached. The
// program requires the OpenTelemetry SDK the library requires, so that
// the build does not depend on what the proxy holds newest.
func TestUserModuleBuildsAgainstAClone(t *testing.T) {
	clone, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	var lib struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(goCmd(t, clone, "mod", "edit", "-json", "go.mod"), &lib); err != nil {
		t.Fatal(err)
	}
	sdk := ""
	for _, r := range lib.Require {
		if r.Path == "go.opentelemetry.io/otel/sdk" {
			sdk = r.Path + "@" + r.Version
		}
	}
	if sdk == "" {
		t.Fatal("the library's go.mod does not require go.opentelemetry.io/otel/sdk")
	}

	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(userProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	// No workspace: the module stands alone, as a user's does.
	env := append(os.Environ(), "GOWORK=off")
	run := func(name string, args ...string) string {
		t.Helper()
		return runFetching(t, mod, env, name, args...)
	}
	run("go", "mod", "init", "example.com/mybuild")
	run("go", "mod", "edit", "-replace", "github.com/otelrecords/otelrecords="+clone)
	run("go", "mod", "edit", "-require", sdk)
	run("go", "mod", "tidy")
	run("go", "vet", "./...")
	run("go", "build", "-o", "mybuild", ".")
	// The session says the library was built from a source tree, not go
	// mod tidy's placeholder version (issue 33).
	if got, want := run(filepath.Join(mod, "mybuild"), filepath.Join(mod, "store")), "compile matmul\nmy build (devel)\n"; got != want {
		t.Errorf("the user's program printed %q, want the record it wrote and its session: %q", got, want)
	}
}
