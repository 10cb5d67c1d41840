// Package bench is otelrecords' side-by-side benchmark suite: every figure
// it measures is a ratio against a reference measured in the same run,
// because the machines it runs on are shared and noisy.
//
// The benchmarks live in _test.go files behind the build tag "bench", so
// `go test ./...` never runs them; the child programs of the figures that
// need a clean process (warm memory, footprint) are under bench/cmd. The
// script bench/run runs everything and prints one line per figure; the
// figures, their targets and the numbers measured are in BENCHMARKS.md at
// the root of the module.
//
//	bench/run                                   # every figure, 13-19 minutes on 2 cores
//	go test -tags bench -run '^$' -bench SpanCPU -benchtime 200000x ./bench   # one figure by hand
package bench
