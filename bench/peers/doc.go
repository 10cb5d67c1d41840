// Package peers measures otelrecords' Collector components beside the
// components a user would pick instead of them, on the same spans in the
// same run: the records exporter beside the contrib fileexporter (OTLP
// protobuf to a file: "persist these spans locally"), and the records
// processor beside the contrib tailsamplingprocessor with a
// string_attribute policy on records.effect ("keep only the traces that
// changed something"), each with the nop exporter, the Collector that
// keeps nothing, as the floor.
//
// It is a module of its own so that the contrib components stay out of
// the collector module's go.mod, and it is not in go.work: run it with
// GOWORK=off. Its go.mod is tidied with `go mod tidy -e`, because the
// module proxy does not serve a module that only the fileexporter's own
// tests import (otlpencodingextension v0.165.0); nothing built here
// needs it.
//
// The benchmarks live in _test.go files behind the build tag "bench",
// as those of the bench package do. Each pipeline runs in a Collector of
// its own (cmd/otelcol-peers, one binary for every pipeline), fed over
// OTLP/HTTP by four clients, and the figure is that process's CPU from
// its first request to its exit — the peers' deferred work (the tail
// sampler's decisions, the file's flushes) and ours (Badger's flushes at
// shutdown) included, its start-up not. bench/run runs it round by round
// and prints its lines in the table:
//
//	cd bench/peers && GOWORK=off go test -tags bench -run '^$' -bench Peers -benchtime 200x
package peers
