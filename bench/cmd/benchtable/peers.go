package main

import "fmt"

// The peers of issue 35, from bench/peers' BenchmarkPeers: our Collector
// components beside the ones a user would pick instead, each pipeline a
// Collector process of its own, fed the same spans in the same round.
// Figure 11 is "persist these spans locally" (the contrib fileexporter;
// restated, the tail sampler keeping what changed in front of it, the
// pipeline a user runs for what the records exporter does),
// 12 "keep only the traces that changed something" (the contrib
// tailsamplingprocessor, a string_attribute policy on records.effect);
// nop is the Collector that keeps nothing. CPU is the whole process's,
// per span, from its first request to its exit.
var peerFigures = []figure{
	timesOver("11 persist locally: records exporter vs fileexporter, CPU", peerCPU("records-exporter"), peerCPU("fileexporter"), 1, "fileexporter"),
	timesOver("11 restated: records exporter vs tail sampler + fileexporter, CPU", peerCPU("records-exporter"), peerCPU("tailsampling-file"), 1, "tail sampler + fileexporter"),
	timesOver("11 (info) tail sampler + fileexporter vs nop, CPU", peerCPU("tailsampling-file"), peerCPU("nop"), 0, ""),
	timesOver("11 (info) fileexporter vs nop, CPU", peerCPU("fileexporter"), peerCPU("nop"), 0, ""),
	timesOver("11 (info) records exporter vs nop, CPU", peerCPU("records-exporter"), peerCPU("nop"), 0, ""),
	spansPerSecond("11 (info) records exporter vs fileexporter, spans/s", "records-exporter", "fileexporter"),
	spansPerSecond("11 (info) fileexporter vs nop, spans/s", "fileexporter", "nop"),
	timesOver("12 keep what changed, warm: records processor vs tail sampler, CPU", peerCPU("records-processor-warm"), peerCPU("tailsampling-warm"), 0.85, "tail sampler"),
	timesOver("12 keep what changed, kept: records processor vs tail sampler, CPU", peerCPU("records-processor-kept"), peerCPU("tailsampling-kept"), 1, "tail sampler"),
	timesOver("12 (info) warm, keep_by session (the default) vs tail sampler, CPU", peerCPU("records-processor-session-warm"), peerCPU("tailsampling-warm"), 0, ""),
	timesOver("12 (info) kept, keep_by session (the default) vs tail sampler, CPU", peerCPU("records-processor-session-kept"), peerCPU("tailsampling-kept"), 0, ""),
	timesOver("12 (info) tail sampler warm vs nop, CPU", peerCPU("tailsampling-warm"), peerCPU("nop"), 0, ""),
	timesOver("12 (info) tail sampler kept vs nop, CPU", peerCPU("tailsampling-kept"), peerCPU("nop"), 0, ""),
	spansPerSecond("12 (info) warm: records processor vs tail sampler, spans/s", "records-processor-warm", "tailsampling-warm"),
	spansPerSecond("12 (info) kept: records processor vs tail sampler, spans/s", "records-processor-kept", "tailsampling-kept"),
	timesOver("12 gateway, 10k changed spans/s into OTLP: records processor vs tail sampler, CPU", gatewayCPU("records-processor-otlp"), gatewayCPU("tailsampling-otlp"), 1, "tail sampler"),
	{
		title: "12 gateway, 10k changed spans/s into OTLP: records processor vs tail sampler, peak RssAnon",
		ours:  the("Gateway/records-processor-otlp", "anon-MiB"), ref: the("Gateway/tailsampling-otlp", "anon-MiB"),
		format: func(v float64) string { return fmt.Sprintf("%.1f MiB", v) }, target: "<= 1x tail sampler", pass: atMost(1),
	},
	{
		title: "12 (info) gateway: records processor vs tail sampler, spans/s", format: func(v float64) string { return fmt.Sprintf("%.0f spans/s", v) },
		ours: the("Gateway/records-processor-otlp", "spans/s"), ref: the("Gateway/tailsampling-otlp", "spans/s"), target: "-", info: true,
	},
}

// gatewayCPU is a pipeline's CPU per span in BenchmarkGateway.
func gatewayCPU(name string) metric { return the("Gateway/"+name, "cpu-ns/span") }

// peerCPU is a pipeline's CPU per span in BenchmarkPeers.
func peerCPU(name string) metric { return the("Peers/"+name, "cpu-ns/span") }

// spansPerSecond is an info line of two pipelines' throughput: the rate
// their Collectors answered the same requests (more is better).
func spansPerSecond(title, ours, ref string) figure {
	return figure{
		title: title, format: func(v float64) string { return fmt.Sprintf("%.0f spans/s", v) },
		ours: the("Peers/"+ours, "spans/s"), ref: the("Peers/"+ref, "spans/s"), target: "-", info: true,
	}
}
