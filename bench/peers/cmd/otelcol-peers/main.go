// Command otelcol-peers is the Collector distribution bench/peers measures:
// the OTLP receiver, our records exporter and processor, and the
// components a user would pick instead of them — the contrib fileexporter
// ("persist these spans locally") and tailsamplingprocessor ("keep only
// some traces") — with the nop exporter, the Collector without either.
// One binary for every pipeline, so that what differs between two
// figures is the pipeline alone. It is built with plain `go build`, in
// this module of its own so that the contrib components stay out of the
// collector module's go.mod:
//
//	cd bench/peers && GOWORK=off go build -o otelcol-peers ./cmd/otelcol-peers
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-peers", Description: "otelrecords beside its peers, for bench/peers", Version: "dev"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		}},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
