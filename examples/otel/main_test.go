package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// dirSize sums the sizes of the files under dir.
func dirSize(t *testing.T, dir string) (n int64) {
	t.Helper()
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func TestColdThenWarm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var cold bytes.Buffer
	if err := run([]string{"-dir", dir}, &cold); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cold.String(), "cold run: 7 changes, session kept with 22 records") {
		t.Fatalf("first run:\n%s", cold.String())
	}
	for _, want := range []string{"tune matmul/f16/128x128", "candidate tiled", "compile reduce_tree", "autotune records, typed:", "example build"} {
		if !strings.Contains(cold.String(), want) {
			t.Errorf("first run's output lacks %q", want)
		}
	}
	if strings.Contains(cold.String(), "read manifest") {
		t.Errorf("first run recorded the implicit mark read manifest, which encloses no record:\n%s", cold.String())
	}
	// The warm run changes nothing: it opens the store only to read it.
	before := dirSize(t, dir)
	var warm bytes.Buffer
	if err := run([]string{"-dir", dir}, &warm); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(warm.String(), "warm run: everything was cached; nothing written") {
		t.Fatalf("second run:\n%s", warm.String())
	}
	if strings.Count(warm.String(), "example build") != 1 {
		t.Fatalf("the warm run added a session:\n%s", warm.String())
	}
	if after := dirSize(t, dir); after != before {
		t.Fatalf("the warm run changed the store: %d -> %d bytes", before, after)
	}
	var reset bytes.Buffer
	if err := run([]string{"-dir", dir, "-reset"}, &reset); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cacheDir(dir)); !os.IsNotExist(err) {
		t.Fatal("-reset left the cache")
	}
	if got := sessionsIn(t, dir); len(got) != 0 {
		t.Fatalf("-reset left the example's sessions: %q", got)
	}
}

// The phases are marks one after the other: each ends before the next
// begins, and the record says so (tune used to be drawn inside load, its
// offset clamped from before the session's clock was read).
func TestPhasesDoNotOverlap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := run([]string{"-dir", dir}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	var phases []sessions.Stamped[sessions.Record]
	for m, err := range openRecords(t, dir).All(sessions.MarksKind) {
		if err != nil {
			t.Fatal(err)
		}
		phases = append(phases, m)
	}
	// The session starts at the instant its id names, up to 2^24 ns
	// before its first span (docs/FORMAT.md §4.1).
	if len(phases) != 3 || phases[0].Record.Name != "load" || phases[0].Stamp.Offset < 0 || phases[0].Stamp.Offset >= 1<<24 {
		t.Fatalf("marks = %+v, want load first (within 2^24 ns of the session's start), tune, compile", phases)
	}
	for i := 1; i < len(phases); i++ {
		prev, next := phases[i-1], phases[i]
		if end := prev.Stamp.Offset + prev.Record.Wall; next.Stamp.Offset < end {
			t.Errorf("%s starts at %v, before %s ends at %v", next.Record.Name, next.Stamp.Offset, prev.Record.Name, end)
		}
	}
}

// The example runs on the user's default store: it must leave every
// session it did not write in place, on a cold run (no pruning to keep a
// count of sessions) and on -reset.
func TestLeavesOtherSessionsAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	for i := range 6 {
		writeForeignSession(t, dir, fmt.Sprint("someone else's build ", i))
	}
	for range 2 {
		// Cold twice: the cache goes in between, the store stays.
		if err := run([]string{"-dir", dir}, new(bytes.Buffer)); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(cacheDir(dir)); err != nil {
			t.Fatal(err)
		}
	}
	got := sessionsIn(t, dir)
	if len(got) != 8 || strings.Count(strings.Join(got, ","), "example build") != 2 {
		t.Fatalf("after two cold runs, sessions = %q: want the 6 others and 2 of the example's", got)
	}
	var out bytes.Buffer
	if err := run([]string{"-dir", dir, "-reset"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "removed 2 sessions of this example") || !strings.Contains(out.String(), "6 other sessions left") {
		t.Fatalf("-reset said:\n%s", out.String())
	}
	got = sessionsIn(t, dir)
	want := []string{"someone else's build 0", "someone else's build 1", "someone else's build 2",
		"someone else's build 3", "someone else's build 4", "someone else's build 5"}
	if !slices.Equal(got, want) {
		t.Fatalf("after -reset, sessions = %q, want the others' alone", got)
	}
	r := openRecords(t, dir)
	kinds, err := r.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kind := range kinds {
		for rec, err := range r.All(kind) {
			if err != nil {
				t.Fatal(err)
			}
			if rec.Record.Name != "compile" {
				t.Errorf("-reset left the example's %s record %q", kind, rec.Record.Name)
			}
			n++
		}
	}
	if n != 6 {
		t.Fatalf("%d records left, want the 6 others'", n)
	}
}

// -reset on a store that does not exist creates none.
func TestResetCreatesNoStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := run([]string{"-dir", dir, "-reset"}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("-reset created %s", dir)
	}
}

// writeForeignSession keeps a session of another program in the store.
func writeForeignSession(t *testing.T, dir, label string) {
	t.Helper()
	rec, err := exporter.New(dir, exporter.WithLabel(label))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "someone-else"))))
	_, s := tp.Tracer("other").Start(context.Background(), "compile", spanbridge.Record("compile", spanbridge.Changed())...)
	s.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// sessionsIn returns the labels of the sessions in the store in dir.
func sessionsIn(t *testing.T, dir string) []string {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close() // before the next run opens it to write
	var out []string
	for s, err := range sessions.NewRecords(st).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s.Label)
	}
	return out
}
