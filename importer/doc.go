// Package importer records spans that did not come through this process's
// OpenTelemetry SDK — OTLP a Collector received from programs in any
// language — into an otelrecords store, one session per sender process,
// under the same rules as the Go SDK's span processor (package exporter):
// the same mapping, stamps, retention, levels, marks policy and keep-by
// rule, read from the same environment variables.
//
//	im, err := importer.New(dir, importer.Config{}, importer.WithKeepBy(importer.KeepByTrace))
//	if err != nil { ... }
//	defer im.Shutdown(ctx)
//	res, err := im.Import(ctx, importer.Batch{Resource: resource, Spans: spans})
//
// A Span is a plain struct of an OTLP span's fields, so that a converter
// (the Collector component's, from pdata) needs nothing but this package.
// Import returns once every span of a kept session it was given is
// durable: a retry of the same batch stores nothing twice (see Importer).
// Stats counts what it did, the SpanProcessor's counters (exporter.Stats)
// summed over its sessions beside its own.
//
// The Collector component of type records (module
// github.com/otelrecords/otelrecords/collector) is an Importer between
// its Start and Shutdown.
package importer
