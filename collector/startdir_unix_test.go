//go:build unix

package collector

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// A directory no store can be written in — a file, a socket, a directory
// in a file, one every user may write without the sticky bit, one holding
// the user's files (the error names the subdirectory to use) — fails the
// Collector's start, naming it, for the exporter and for a processor that
// records locally; exporter.New checks a path the same way. Before, the
// exporter started, acknowledged every span and failed every export.
func TestStartRefusesDirectoriesNoStoreCanBeWrittenIn(t *testing.T) {
	ctx := context.Background()
	for path, want := range testsupport.NoStorePaths(t) {
		f := NewFactory()
		cfg := f.CreateDefaultConfig().(*Config)
		cfg.Directory = path
		exp, err := f.CreateTraces(ctx, exportertest.NewNopSettings(componentType), cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = exp.Start(ctx, componenttest.NewNopHost())
		if err == nil {
			exp.Shutdown(ctx)
		}
		if !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), want) {
			t.Errorf("exporter with directory %s: Start = %v, want an error saying %q", path, err, want)
		}

		pf := NewProcessorFactory()
		pcfg := pf.CreateDefaultConfig().(*ProcessorConfig)
		pcfg.Directory = path
		proc, err := pf.CreateTraces(ctx, processortest.NewNopSettings(componentType), pcfg, consumertest.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		err = proc.Start(ctx, componenttest.NewNopHost())
		if err == nil {
			proc.Shutdown(ctx)
		}
		if !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), want) {
			t.Errorf("processor with directory %s: Start = %v, want an error saying %q", path, err, want)
		}
	}
}
