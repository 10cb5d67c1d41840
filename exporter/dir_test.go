//go:build unix

package exporter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// New fails at once for a path no store can be written in — a file, a
// socket, a directory in a file, one every user may write without the
// sticky bit — naming it. Before, New succeeded and the session was lost
// (a file: only Shutdown said "not a directory"; a socket: reported as
// "another process held the store").
func TestNewRefusesPathsNoStoreCanBeWrittenIn(t *testing.T) {
	for path, want := range testsupport.NoStorePaths(t) {
		exp, err := exporter.New(path)
		if err == nil {
			exp.Shutdown(context.Background())
		}
		if !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "another process") {
			t.Errorf("New(%s) = %v, want an error saying %q", path, err, want)
		}
	}
}

// A directory holding the user's files is refused at New, with an error
// naming the subdirectory to use, and nothing is written beside the
// user's files: not at New, not at the session's first write (there is
// none), not at Shutdown. So is one set in OTELRECORDS_DIR. Before, the
// store went in the directory's child otelrecords/.
func TestNewRefusesADirectoryOfTheUsers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "build")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fix := "use a subdirectory, e.g. " + filepath.Join(dir, "records")
	exp, err := exporter.New(dir)
	if err == nil {
		exp.Shutdown(context.Background())
	}
	if !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), fix) || !strings.Contains(err.Error(), "main.go") {
		t.Errorf("New(%s) = %v, want ErrNotStoreDir naming main.go and saying %q", dir, err, fix)
	}
	t.Setenv(exporter.EnvDir, dir)
	exp, err = exporter.New("")
	if err == nil {
		exp.Shutdown(context.Background())
	}
	if !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), fix) {
		t.Errorf("New with %s=%s: %v, want ErrNotStoreDir saying %q", exporter.EnvDir, dir, err, fix)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(des) != 1 || des[0].Name() != "main.go" {
		t.Errorf("the user's directory holds %v, want main.go alone", des)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the user's directory: %v, %v; want mode 0755 as it was", fi.Mode(), err)
	}

	// The subdirectory the error names is a store.
	p := newProvider(t, filepath.Join(dir, "records"))
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	r, done := readAll(t, filepath.Join(dir, "records"))
	defer done()
	if got := names(t, r, "compile"); len(got) != 1 {
		t.Errorf("records %v in the subdirectory, want [c]", got)
	}
}

// OTELRECORDS_DIR set to a shared directory (mode 1777) is refused,
// naming a subdirectory, which takes the store; the shared directory
// keeps its mode. "~" is the home directory.
func TestNewInASharedDirectory(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	t.Setenv(exporter.EnvDir, shared)
	if exp, err := exporter.New(""); err == nil {
		exp.Shutdown(context.Background())
		t.Errorf("New in the shared directory %s: no error", shared)
	} else if want := filepath.Join(shared, "records"); !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), want) {
		t.Errorf("New in the shared directory: %v, want ErrNotStoreDir naming %s", err, want)
	}
	t.Setenv(exporter.EnvDir, filepath.Join(shared, "records"))
	p := newProvider(t, "")
	if want := filepath.Join(shared, "records"); p.exp.Dir() != want {
		t.Errorf("Dir() = %q, want %q", p.exp.Dir(), want)
	}
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	if fi, err := os.Stat(shared); err != nil || fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("shared directory: %v, %v; want drwxrwxrwt as it was", fi.Mode(), err)
	}
	r, done := readAll(t, filepath.Join(shared, "records"))
	defer done()
	if got := names(t, r, "compile"); len(got) != 1 {
		t.Errorf("records %v read in the store, want [c]", got)
	}

	home := t.TempDir()
	t.Setenv("HOME", home)
	p = newProvider(t, "~/records")
	if want := filepath.Join(home, "records"); p.exp.Dir() != want {
		t.Errorf("Dir() = %q, want %q", p.exp.Dir(), want)
	}
	p.shutdown(t)
}

// Two exporters of one process on one directory: the second is refused,
// saying so — not "another process" — until the first has shut down.
func TestTwoExportersOnOneDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	first, err := exporter.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exporter.New(dir); !errors.Is(err, exporter.ErrDirInUse) || !strings.Contains(err.Error(), "this process") {
		t.Fatalf("second New on %s = %v, want ErrDirInUse", dir, err)
	}
	// The same directory through a link is the same directory.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := exporter.New(link); !errors.Is(err, exporter.ErrDirInUse) {
		t.Fatalf("New through a link = %v, want ErrDirInUse", err)
	}
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := exporter.New(dir)
	if err != nil {
		t.Fatalf("New after the first shut down: %v", err)
	}
	again.Shutdown(context.Background())
}

// failingMeters is a MeterProvider whose callbacks cannot be registered.
type failingMeters struct{ noop.MeterProvider }

func (failingMeters) Meter(string, ...metric.MeterOption) metric.Meter { return failingMeter{} }

type failingMeter struct{ noop.Meter }

func (failingMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	return nil, errors.New("no callbacks here")
}

// A New that fails after it claimed its directory gives it back.
func TestFailedNewReleasesItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, err := exporter.New(dir, exporter.WithMeterProvider(failingMeters{})); err == nil {
		t.Fatal("New with failing metrics returned no error")
	}
	exp, err := exporter.New(dir)
	if err != nil {
		t.Fatalf("New after a failed New on the directory: %v", err)
	}
	exp.Shutdown(context.Background())
}
