// Command otelcol-records is an OpenTelemetry Collector with what a
// records pipeline needs: the OTLP receiver (gRPC and HTTP); the batch,
// memory_limiter and records processors; the records, OTLP and nop
// exporters (nop for measuring the Collector without us); the
// file_storage extension, for a persistent sending queue. It is built with plain
// `go build`, no Collector builder:
//
//	go build -o otelcol-records ./collector/cmd/otelcol-records
//	./otelcol-records --config collector/cmd/otelcol-records/config.yaml
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	if err := otelcol.NewCommand(settings()).Execute(); err != nil {
		log.Fatal(err)
	}
}

// settings are the distribution's: its components, and configurations
// from files, environment variables and inline YAML.
func settings() otelcol.CollectorSettings {
	return otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-records", Description: "OpenTelemetry Collector recording sessions with otelrecords", Version: "dev"},
		Factories: Components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory(), yamlprovider.NewFactory()},
		}},
	}
}
