package collector

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

// BenchmarkCollector measures spans/s and the Collector's CPU per span
// through otelcol-records, receiver straight to exporter (no batch
// processor, so a request's reply means its spans were exported): once
// with the records exporter, once with the nop exporter, the Collector
// without us. Each op is one OTLP/HTTP request of spansPerRequest spans
// (100 traces of 10 nested spans, every trace changed something, so every
// span is written), sent by 4 clients at once. Run it with
//
//	go test ./collector -run '^$' -bench Collector -benchtime 200x -count 3
func BenchmarkCollector(b *testing.B) {
	bins, err := tools()
	if err != nil {
		b.Fatal(err)
	}
	for _, exp := range []string{"nop", "records", "processor"} {
		b.Run("exporter="+exp, func(b *testing.B) {
			col := startBenchCollector(b, bins["otelcol"], exp)
			reqs := make([][]byte, b.N)
			for i := range reqs {
				reqs[i] = benchRequest(i)
			}
			cpu0 := processCPU(b, col.cmd.Process.Pid)
			b.ResetTimer()
			start := time.Now()
			postAll(b, col.url, reqs)
			elapsed := time.Since(start)
			b.StopTimer()
			spans := float64(b.N * spansPerRequest)
			b.ReportMetric(spans/elapsed.Seconds(), "spans/s")
			b.ReportMetric(float64(processCPU(b, col.cmd.Process.Pid)-cpu0)/spans, "cpu-ns/span")
			col.stop(b)
		})
	}
}

// postAll sends every body to url over OTLP/HTTP, 4 clients at once,
// and fails b for each request not answered 200.
func postAll(b testing.TB, url string, bodies [][]byte) {
	var wg sync.WaitGroup
	next := make(chan []byte)
	for range 4 {
		wg.Go(func() {
			for body := range next {
				resp, err := http.Post(url, "application/x-protobuf", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("POST: %s", resp.Status)
				}
			}
		})
	}
	for _, body := range bodies {
		next <- body
	}
	close(next)
	wg.Wait()
}

const spansPerRequest = 1000

// benchRequest is the OTLP/HTTP body of request i: its own traces,
// every span of which changed something.
func benchRequest(i int) []byte { return benchRequestOf(i, "changed") }

// benchRequestOf is benchRequest with every span's records.effect said
// to be effect: "observed" is a warm sender's request.
func benchRequestOf(i int, effect string) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench")
	rs.Resource().Attributes().PutStr("service.instance.id", "bench-1")
	ss := rs.ScopeSpans().AppendEmpty()
	t0 := pcommon.NewTimestampFromTime(time.Now())
	for tr := range spansPerRequest / 10 {
		tid := pcommon.TraceID{byte(i >> 16), byte(i >> 8), byte(i), byte(tr), 15: 1} // never the invalid zero id
		for s := range 10 {
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(tid)
			sp.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, byte(s + 1)})
			if s > 0 {
				sp.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, byte(s)})
			}
			sp.SetName("compile unit " + strconv.Itoa(s))
			sp.SetStartTimestamp(t0 + pcommon.Timestamp(s))
			sp.SetEndTimestamp(t0 + 1e6)
			sp.Attributes().PutStr("records.kind", "artifact")
			sp.Attributes().PutStr("records.effect", effect)
			sp.Attributes().PutStr("target", "lib/unit"+strconv.Itoa(s)+".o")
			sp.Attributes().PutInt("bytes", int64(1000*s))
		}
	}
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return body
}

// startBenchCollector starts otelcol-records with the OTLP receiver
// feeding exporter exp directly, or, for "processor", the records
// processor feeding the nop exporter.
func startBenchCollector(b *testing.B, bin, exp string) *collectorProc {
	b.Helper()
	procs := ""
	if exp == "processor" {
		procs, exp = "records", "nop"
	}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%%d
processors:
  records:
    state_directory: %[4]s
exporters:
  nop:
  records:
    directory: %[1]s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [%[2]s]
      exporters: [%[3]s]
`, filepath.Join(b.TempDir(), "store"), procs, exp, filepath.Join(b.TempDir(), "state"))
	return startCollectorConfig(b, bin, cfg)
}

// processCPU is the user and system CPU pid has used, in nanoseconds.
func processCPU(b *testing.B, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th of them, in clock ticks (100 a second
	// on Linux).
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * int64(10*time.Millisecond)
}

// BenchmarkInProcess measures the CPU per span of the records processor
// (keep_by trace, followed by a sink that drops what it is given) and of
// the records exporter in this process, without a Collector around them:
// the same requests as BenchmarkCollector, every trace kept, decoded
// before the clock starts and given one after another. cpu-ns/span is the
// process's CPU over the requests and the component's shutdown, its
// background work (Badger's flushes, the garbage collector) included. It
// is the quick loop for the kept path's costs, where the figures of
// bench/peers need a Collector process per pipeline. Run it with
//
//	go test ./collector -run '^$' -bench InProcess -benchtime 400x -count 3
func BenchmarkInProcess(b *testing.B) {
	// The processor as figure 12 runs it (keep_by: trace, no directory,
	// the nop exporter after it), on kept and on warm spans, and with a
	// store of its own.
	for _, bc := range []struct {
		name, effect string
		dir          bool
	}{
		{"processor-kept", "changed", true},
		{"processor-kept-nodir", "changed", false},
		{"processor-warm-nodir", "observed", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
			if bc.dir {
				cfg.Directory = filepath.Join(b.TempDir(), "store")
			} else {
				cfg.StateDirectory = filepath.Join(b.TempDir(), "state")
			}
			cfg.KeepBy = "trace"
			p, err := NewProcessorFactory().CreateTraces(context.Background(), processortest.NewNopSettings(componentType), cfg, consumertest.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			runInProcess(b, p, bc.effect)
		})
	}
	b.Run("exporter-kept", func(b *testing.B) {
		cfg := NewFactory().CreateDefaultConfig().(*Config)
		cfg.Directory = filepath.Join(b.TempDir(), "store")
		exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(componentType), cfg)
		if err != nil {
			b.Fatal(err)
		}
		runInProcess(b, exp, "changed")
	})
}

// runInProcess starts c, gives it b.N requests of spansPerRequest spans
// whose records.effect is effect, and shuts it down, reporting the
// process's CPU per span.
func runInProcess(b *testing.B, c interface {
	component.Component
	consumer.Traces
}, effect string) {
	ctx := context.Background()
	if err := c.Start(ctx, componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	tds := make([]ptrace.Traces, b.N)
	for i := range tds {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(benchRequestOf(i, effect))
		if err != nil {
			b.Fatal(err)
		}
		tds[i] = td
	}
	runtime.GC()
	as0, re0 := handedAsReceived.Load(), handedRemade.Load()
	cpu0 := processCPU(b, os.Getpid())
	b.ResetTimer()
	for i := range tds {
		if err := c.ConsumeTraces(ctx, tds[i]); err != nil {
			b.Fatal(err)
		}
		tds[i] = ptrace.Traces{} // given: the sender's buffer is the Collector's garbage
	}
	if err := c.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b, os.Getpid())-cpu0)/float64(b.N*spansPerRequest), "cpu-ns/span")
	if as, re := handedAsReceived.Load()-as0, handedRemade.Load()-re0; as+re > 0 {
		b.ReportMetric(float64(as)/float64(as+re), "as-received")
	}
}
