package collector

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/instruments"
)

// registerMetrics publishes what the Importer counts (importer.Stats)
// through the Collector's own telemetry (its MeterProvider, which names
// the component), under "otelcol.records.": the Collector's instruments of
// the one table the Go SDK's SpanProcessor publishes too (package
// instruments; docs/COLLECTOR.md lists them). They are observed when the
// Collector's reader collects: nothing is counted on the export path. It
// returns the function that unregisters them.
//
// Each carries the attribute exporter, the component's ID (records,
// records/fleet), as the Collector's own exporter metrics do.
func registerMetrics(mp metric.MeterProvider, id string, im *importer.Importer) (func() error, error) {
	reg, err := instruments.Register(mp.Meter("github.com/otelrecords/otelrecords/collector"), instruments.Collector,
		im.Stats, attribute.String("exporter", id))
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
