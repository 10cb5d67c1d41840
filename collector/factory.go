package collector

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	otelexporter "go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelrecords/otelrecords/importer"
)

// typeStr is the component type, as a Collector configuration names it.
const typeStr = "records"

// componentType is the exporter's component.Type.
var componentType = component.MustNewType(typeStr)

// NewFactory returns the factory of the records exporter, for a
// Collector distribution's exporter factories.
func NewFactory() otelexporter.Factory {
	return otelexporter.NewFactory(componentType, createDefaultConfig,
		otelexporter.WithTraces(createTraces, component.StabilityLevelAlpha))
}

// createDefaultConfig is the configuration an empty `records:` section
// gives: the library's defaults.
func createDefaultConfig() component.Config {
	return &Config{
		RecordsConfig: defaultRecordsConfig(),
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:   configoptional.Default(exporterhelper.NewDefaultQueueConfig()),
		BackOffConfig: configretry.NewDefaultBackOffConfig(),
	}
}

// defaultRecordsConfig is the library's defaults, for the exporter and
// the processor.
func defaultRecordsConfig() RecordsConfig {
	return RecordsConfig{
		KeepBy:         importer.DefaultKeepBy.String(),
		Level:          importer.DefaultLevel.String(),
		Marks:          importer.DefaultMarks.String(),
		SessionTimeout: importer.DefaultSessionTimeout,
		DecisionWait:   importer.DefaultDecisionWait,
		MaxHeldBytes:   importer.DefaultHeldBytes,
		DedupWindow:    importer.DefaultDedupWindow,
		DedupMaxBytes:  importer.DefaultDedupBytes,
	}
}

// createTraces creates the exporter. The store is opened only when a
// session is kept, so creating it touches nothing.
func createTraces(ctx context.Context, set otelexporter.Settings, cfg component.Config) (otelexporter.Traces, error) {
	c := cfg.(*Config)
	ic, opts, err := c.options()
	if err != nil {
		return nil, err
	}
	r := &recordsExporter{dir: c.Directory, id: set.ID.String(), ic: ic, opts: opts, set: set.TelemetrySettings, logger: set.Logger}
	return exporterhelper.NewTraces(ctx, set, cfg, r.consume,
		exporterhelper.WithStart(r.start),
		exporterhelper.WithShutdown(r.shutdown),
		exporterhelper.WithTimeout(c.TimeoutConfig),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}))
}
