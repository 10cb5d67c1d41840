package exporter

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/otelrecords/otelrecords/instruments"
)

// WithMeterProvider publishes the exporter's counters (Stats) as
// OpenTelemetry metrics named under "otelrecords.", observed when the
// provider's reader collects: nothing is computed on the span path. The
// instruments are the Collector component's (under "otelcol.records."),
// one table of names and meanings; docs/COLLECTOR.md lists them.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// registerMetrics registers the SDK's instruments of the one table, with
// one callback observing every counter.
func (e *Exporter) registerMetrics(mp metric.MeterProvider) error {
	m := mp.Meter("github.com/otelrecords/otelrecords/exporter")
	_, err := instruments.Register(m, instruments.SDK, e.Stats)
	return err
}
