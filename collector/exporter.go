package collector

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelrecords/otelrecords/exporter"
)

// recordsExporter is the component: an exporter.Importer between Start
// and Shutdown.
type recordsExporter struct {
	dir    string
	ic     exporter.ImporterConfig
	opts   []exporter.Option
	logger *zap.Logger
	im     *exporter.Importer
}

// start creates the Importer; it opens nothing until a session is kept.
func (r *recordsExporter) start(context.Context, component.Host) error {
	im, err := exporter.NewImporter(r.dir, r.ic, r.opts...)
	if err != nil {
		return err
	}
	r.im = im
	r.logger.Info("recording sessions", zap.String("directory", im.Dir()))
	return nil
}

// consume records one batch of the pipeline. It returns once what it was
// given is written, held under the retention rules, or spooled (a store
// another process holds past the export's timeout): only then is the
// batch acknowledged.
func (r *recordsExporter) consume(ctx context.Context, td ptrace.Traces) error {
	return r.im.Import(ctx, batches(td)...)
}

// shutdown records every held trace, writes what the sessions keep and
// lets the store go.
func (r *recordsExporter) shutdown(ctx context.Context) error {
	if r.im == nil {
		return nil
	}
	return r.im.Shutdown(ctx)
}
