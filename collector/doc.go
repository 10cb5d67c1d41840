// Package collector is the OpenTelemetry Collector exporter of type
// "records": OTLP from programs in any language, recorded into an
// otelrecords store through the library's importer.Importer, under the
// same rules as the Go SpanProcessor (retention, levels, marks). One
// session per sender process (records.session.id, else
// service.instance.id, else its Resource), whose row describes the
// sender. Build it into a distribution with NewFactory, or use the one in
// cmd/otelcol-records.
//
// A Collector's traces pipeline hands the exporter batches. ConsumeTraces
// returns success only once every span of a kept session in its batch is
// durable — written to the store, spans still waiting for their parents
// written ahead — so the receiver's acknowledgement to a sender means
// what it says; a batch delivered again (the sender's retry, a
// persistent sending_queue replaying after a crash) is taken once. What a
// crash can lose is what the retention rules hold in memory for sessions
// and traces that have not changed anything yet, exactly what a Go
// program linking the library would lose. Leave the batch processor out
// (it acknowledges before the store has the spans); a sending_queue over
// the file_storage extension acknowledges once a batch is on disk in the
// queue. docs/COLLECTOR.md says what each bound does and what a sender
// sees.
package collector
