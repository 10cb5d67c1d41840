package collector

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkGateway10k is a gateway's figure in the shape of the
// Collector's own load tests (testbed TestTrace10kSPS): 10,000 spans a
// second in requests of 100 spans, over OTLP/HTTP, from 10 senders (each
// its own service.instance.id), with the process's CPU and peak
// anonymous memory reported. Each op is one second of that load. The
// exporters: nop (the distribution without us), records with every span
// observed (a warm fleet: nothing written), and records with every span
// changed (every span written). Run it with
//
//	go test ./collector -run '^$' -bench Gateway10k -benchtime 20x -count 3
func BenchmarkGateway10k(b *testing.B) {
	bins, err := tools()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, exp string
		changed   bool
	}{{"nop", "nop", false}, {"records-warm", "records", false}, {"records-changed", "records", true}} {
		b.Run(c.name, func(b *testing.B) {
			col := startBenchCollector(b, bins["otelcol"], c.exp)
			stop := make(chan struct{})
			peak := peakAnon(col.cmd.Process.Pid, stop)
			cpu0 := processCPU(b, col.cmd.Process.Pid)
			b.ResetTimer()
			start := time.Now()
			tick := time.NewTicker(10 * time.Millisecond) // 100 requests a second
			late := 0
			for i := range b.N * 100 {
				<-tick.C
				t0 := time.Now()
				resp, err := http.Post(col.url, "application/x-protobuf", bytes.NewReader(gatewayRequest(i, c.changed)))
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("POST: %s", resp.Status)
				}
				if time.Since(t0) > 10*time.Millisecond {
					late++
				}
			}
			tick.Stop()
			elapsed := time.Since(start)
			b.StopTimer()
			cpu := processCPU(b, col.cmd.Process.Pid) - cpu0
			close(stop)
			spans := float64(b.N * 100 * 100)
			b.ReportMetric(spans/elapsed.Seconds(), "spans/s")
			b.ReportMetric(float64(cpu)/elapsed.Seconds()/1e7, "cpu-%")
			b.ReportMetric(float64(cpu)/spans, "cpu-ns/span")
			b.ReportMetric(float64(<-peak)/(1<<20), "peak-anon-MiB")
			b.ReportMetric(float64(late), "slow-requests")
			col.stop(b)
		})
	}
}

// gatewayRequest is request i of the gateway's load: 100 spans of one of
// ten senders, each its own root, observed or changed.
func gatewayRequest(i int, changed bool) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "gateway-bench")
	rs.Resource().Attributes().PutStr("service.instance.id", "sender-"+strconv.Itoa(i%10))
	ss := rs.ScopeSpans().AppendEmpty()
	now := pcommon.NewTimestampFromTime(time.Now())
	for s := range 100 {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), byte(s), 15: 1})
		sp.SetSpanID(pcommon.SpanID{7: 1})
		sp.SetName("lookup " + strconv.Itoa(s))
		sp.SetStartTimestamp(now - 1e6)
		sp.SetEndTimestamp(now)
		sp.Attributes().PutStr("records.kind", "lookup")
		if changed {
			sp.Attributes().PutStr("records.effect", "changed")
		}
		sp.Attributes().PutStr("key", "k"+strconv.Itoa(i*100+s))
	}
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return body
}
