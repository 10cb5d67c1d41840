// Package collector is the OpenTelemetry Collector exporter of type
// "records": OTLP from programs in any language, recorded into an
// otelrecords store through the library's exporter.Importer, under the
// same rules as the Go SpanProcessor (retention, levels, marks). One
// session per sender process (records.session.id, else
// service.instance.id, else its Resource), whose row describes the
// sender. Build it into a distribution with NewFactory, or use the one in
// cmd/otelcol-records.
//
// A Collector's traces pipeline hands the exporter batches; ConsumeTraces
// returns success only once what it was given is written to the store, or
// held under the retention rules. With the Collector's sending_queue
// enabled (it is off by default here) the receiver's acknowledgement comes
// earlier, when the batch is queued in the Collector's memory: a crash of
// the Collector then loses what the queue held. With the queue off, a
// crash loses what the retention rules hold in memory (sessions not kept
// yet, traces waiting for their roots), exactly what a Go program linking
// the library would lose if it crashed.
package collector
