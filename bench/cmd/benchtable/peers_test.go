package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// peersInput is BenchmarkPeers' output of two rounds (abridged: every
// pipeline the peer figures read, in go test's format).
const peersInput = `BenchmarkPeers/nop-2 200 2282672 ns/op 3500 cpu-ns/span 438084 spans/s
BenchmarkPeers/fileexporter-2 200 2682656 ns/op 4000 cpu-ns/span 372766 spans/s
BenchmarkPeers/records-exporter-2 200 16225862 ns/op 16000 cpu-ns/span 61630 spans/s
BenchmarkPeers/tailsampling-file-2 200 7900000 ns/op 12500 cpu-ns/span 126582 spans/s
BenchmarkPeers/tailsampling-warm-2 200 5769938 ns/op 11000 cpu-ns/span 173312 spans/s
BenchmarkPeers/records-processor-warm-2 200 4270342 ns/op 6600 cpu-ns/span 234174 spans/s
BenchmarkPeers/records-processor-session-warm-2 200 4556178 ns/op 7100 cpu-ns/span 219483 spans/s
BenchmarkPeers/tailsampling-kept-2 200 7389670 ns/op 11600 cpu-ns/span 135324 spans/s
BenchmarkPeers/records-processor-kept-2 200 10903577 ns/op 10200 cpu-ns/span 91714 spans/s
BenchmarkPeers/records-processor-session-kept-2 200 10048185 ns/op 10500 cpu-ns/span 99521 spans/s
BenchmarkPeers/nop-2 200 2282672 ns/op 3600 cpu-ns/span 438084 spans/s
BenchmarkPeers/fileexporter-2 200 2682656 ns/op 5000 cpu-ns/span 372766 spans/s
BenchmarkPeers/records-exporter-2 200 16225862 ns/op 15000 cpu-ns/span 61630 spans/s
BenchmarkPeers/tailsampling-file-2 200 7900000 ns/op 13000 cpu-ns/span 126582 spans/s
BenchmarkPeers/tailsampling-warm-2 200 5769938 ns/op 12000 cpu-ns/span 173312 spans/s
BenchmarkPeers/records-processor-warm-2 200 4270342 ns/op 12600 cpu-ns/span 234174 spans/s
BenchmarkPeers/records-processor-session-warm-2 200 4556178 ns/op 7100 cpu-ns/span 219483 spans/s
BenchmarkPeers/tailsampling-kept-2 200 7389670 ns/op 11600 cpu-ns/span 135324 spans/s
BenchmarkPeers/records-processor-kept-2 200 10903577 ns/op 10200 cpu-ns/span 91714 spans/s
BenchmarkPeers/records-processor-session-kept-2 200 10048185 ns/op 10500 cpu-ns/span 99521 spans/s
BenchmarkGateway/tailsampling-otlp-2 1000 10049898 ns/op 60.47 anon-MiB 35822 cpu-ns/span 9950 spans/s
BenchmarkGateway/records-processor-otlp-2 1000 10000468 ns/op 15.88 anon-MiB 13031 cpu-ns/span 10000 spans/s
`

// TestPeerLines reads the peers' lines from BenchmarkPeers' output: every
// figure has its data, and the targets compare round by round.
func TestPeerLines(t *testing.T) {
	s := read(t, peersInput)
	for _, f := range peerFigures {
		if cols, ok := columns(t, f, s); !ok {
			t.Errorf("%s: %q", f.title, cols)
		}
	}
	// Rounds: 16000/4000 = 4.0, 15000/5000 = 3.0.
	cols, _ := columns(t, figureTitled(t, "11 persist locally: records exporter vs fileexporter, CPU"), s)
	want := []string{"11 persist locally: records exporter vs fileexporter, CPU", "15500 ns", "4500 ns", "3.50x", "3.00x..4.00x", "n=2", "<= 1x fileexporter", "MISS"}
	if !slices.Equal(cols, want) {
		t.Errorf("line = %q, want %q", cols, want)
	}
	// Rounds: 6600/11000 = 0.60, 12600/12000 = 1.05: the median, 0.82 (0.825 rounded down),
	// passes though one round did not.
	cols, _ = columns(t, figureTitled(t, "12 keep what changed, warm: records processor vs tail sampler, CPU"), s)
	if cols[3] != "0.82x" || cols[4] != "0.60x..1.05x" || cols[7] != "PASS" {
		t.Errorf("warm line = %q, want 0.82x, 0.60x..1.05x, PASS", cols)
	}
	// Rounds: 16000/12500 = 1.28, 15000/13000 = 1.15.
	cols, _ = columns(t, figureTitled(t, "11 restated: records exporter vs tail sampler + fileexporter, CPU"), s)
	if cols[3] != "1.22x" || cols[4] != "1.15x..1.28x" || cols[7] != "MISS" {
		t.Errorf("restated line = %q, want 1.22x, 1.15x..1.28x, MISS", cols)
	}
	cols, _ = columns(t, figureTitled(t, "11 (info) fileexporter vs nop, spans/s"), s)
	if cols[1] != "372766 spans/s" || cols[2] != "438084 spans/s" || cols[7] != "info" {
		t.Errorf("spans/s line = %q", cols)
	}
}

// TestPeerTargets holds the peers to issue 35's targets, and every other
// peer line to being information.
func TestPeerTargets(t *testing.T) {
	for title, target := range map[string]string{
		"11 persist locally: records exporter vs fileexporter, CPU":                                  "<= 1x fileexporter",
		"11 restated: records exporter vs tail sampler + fileexporter, CPU":                          "<= 1x tail sampler + fileexporter",
		"12 keep what changed, warm: records processor vs tail sampler, CPU":                         "<= 0.85x tail sampler",
		"12 keep what changed, kept: records processor vs tail sampler, CPU":                         "<= 1x tail sampler",
		"12 gateway, 10k changed spans/s into OTLP: records processor vs tail sampler, CPU":          "<= 1x tail sampler",
		"12 gateway, 10k changed spans/s into OTLP: records processor vs tail sampler, peak RssAnon": "<= 1x tail sampler",
	} {
		if f := figureTitled(t, title); f.target != target {
			t.Errorf("%s: target %q, want %q", title, f.target, target)
		}
	}
	for _, f := range peerFigures {
		if f.info != (f.target == "-") || f.format == nil {
			t.Errorf("%s: info %v, target %q, format set %v", f.title, f.info, f.target, f.format != nil)
		}
	}
}

// TestPeerNamesAreTheBenchmarks keeps the names the peer figures read
// those BenchmarkPeers reports: a pipeline renamed there would otherwise
// leave its lines with no data only when bench/run is next run.
func TestPeerNamesAreTheBenchmarks(t *testing.T) {
	for _, f := range peerFigures {
		for _, m := range []metric{f.ours, f.ref} {
			bench, name, _ := strings.Cut(m.name, "/")
			file := map[string]string{"Peers": "peers_test.go", "Gateway": "gateway_test.go"}[bench]
			src, err := os.ReadFile("../../peers/" + file)
			if err != nil {
				t.Fatalf("%s reads %s: %v", f.title, m.name, err)
			}
			if !strings.Contains(string(src), `{"`+name+`", `) {
				t.Errorf("%s reads %s, which bench/peers/%s does not run", f.title, m.name, file)
			}
		}
	}
}
