// Package tracefile writes the sessions of a store as trace files, for
// the tools people already have: the Chrome Trace Event format, which
// Perfetto UI (ui.perfetto.dev) and chrome://tracing open (WriteChrome),
// and OTLP JSON, which a Collector's OTLP/HTTP receiver takes as it is
// (WriteOTLP).
//
// A Chrome trace draws each session as a process and each record as a
// complete event of its name, with its kind as category, starting at its
// session's start plus its offset; the events of one thread must nest, so
// records that overlap without one containing the other are put on
// threads of their own ("lanes").
//
// An OTLP JSON file holds the spans records replay sends (package replay,
// spanbridge.Span): each session a ResourceSpans, each record a span with
// its original trace, span and parent ids. It is written as the OTLP
// exporter would send them, field for field, in the protobuf JSON mapping
// OTLP/HTTP takes (ids in hex, enums as numbers, 64-bit integers as
// strings), without the exporter: the library needs no OTLP client, no
// protobuf and no gRPC.
//
// Both read the store as it goes and hold a bounded amount: a Chrome trace
// a few words a record of the largest session (where each lies, for the
// lanes), OTLP JSON at most a few MiB of one session at a time.
package tracefile
