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
//
// With OTELCOL_CPUPROFILE set to a file name, it writes a CPU profile of
// its whole run there, for a look at where a pipeline's CPU goes (the
// benchmark's Collectors inherit the variable; the last one run leaves
// its profile):
//
//	OTELCOL_CPUPROFILE=/tmp/col.prof ./peers.test -test.run '^$' \
//	  -test.bench 'BenchmarkPeers/records-processor-kept$' -test.benchtime 200x -otelcol ./otelcol-peers
//
// OTELCOL_MEMPROFILE likewise writes a heap profile at its exit: what
// its run allocated (alloc_space, alloc_objects), sampled every 4 KiB.
package main

import (
	"log"
	"os"
	"runtime"
	"runtime/pprof"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	if path := os.Getenv("OTELCOL_CPUPROFILE"); path != "" {
		stop, err := profile(path)
		if err != nil {
			log.Fatal(err)
		}
		defer stop()
	}
	if path := os.Getenv("OTELCOL_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 4096
		defer writeHeap(path)
	}
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-peers", Description: "otelrecords beside its peers, for bench/peers", Version: "dev"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		}},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Print(err)
		defer os.Exit(1) // after the profile is written
	}
}

// profile starts a CPU profile into path, and returns what stops it.
func profile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeap writes the heap profile, what the run allocated, to path.
func writeHeap(path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		log.Print(err)
	}
}
