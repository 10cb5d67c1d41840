package collector

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkDedupMemory is what remembering spans (to take each once,
// dedup_window) costs a Collector: 1,100 requests of 1,000 changed spans
// — 1.1 million spans, in traces of one span and in traces of ten — sent
// to otelcol-records over OTLP/HTTP by 4 clients, the process's peak
// anonymous memory reported, with the defaults (every span remembered)
// and with dedup_max_bytes at its 1 MiB floor (about 65,000 remembered);
// dedup-B/span is the difference over the spans. Run it with
//
//	go test ./collector -run '^$' -bench DedupMemory -benchtime 1x
func BenchmarkDedupMemory(b *testing.B) {
	bins, err := tools()
	if err != nil {
		b.Fatal(err)
	}
	const requests, perRequest = 1100, 1000
	for _, per := range []int{1, 10} {
		b.Run(fmt.Sprintf("traces-of-%d", per), func(b *testing.B) {
			bodies := make([][]byte, requests)
			for i := range bodies {
				bodies[i] = dedupBody(i, perRequest, per)
			}
			peak := map[string]float64{}
			for b.Loop() {
				for _, c := range []struct{ name, extra string }{{"default", ""}, {"floor", "    dedup_max_bytes: 1048576"}} {
					dir := filepath.Join(b.TempDir(), "store")
					p := freePorts(b)
					col := startAt(b, bins["otelcol"], pipelineConfig(dir, c.extra, ""), p)
					stop := make(chan struct{})
					rss := peakAnon(col.cmd.Process.Pid, stop)
					postAll(b, col.url, bodies)
					close(stop)
					peak[c.name] = float64(<-rss)
					col.stop(b)
				}
			}
			b.ReportMetric(peak["default"]/(1<<20), "peak-anon-MiB")
			b.ReportMetric(peak["floor"]/(1<<20), "floor-peak-anon-MiB")
			b.ReportMetric((peak["default"]-peak["floor"])/(requests*perRequest), "dedup-B/span")
		})
	}
}

// dedupBody is request i of BenchmarkDedupMemory: n changed spans of one
// sender, in traces of per spans (a root and its children).
func dedupBody(i, n, per int) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "dedup-bench")
	rs.Resource().Attributes().PutStr("service.instance.id", "dedup-bench-1")
	ss := rs.ScopeSpans().AppendEmpty()
	t0 := pcommon.NewTimestampFromTime(time.Now())
	for s := range n {
		tr := s / per
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{byte(i >> 16), byte(i >> 8), byte(i), byte(tr >> 8), byte(tr), 15: 1})
		sp.SetSpanID(pcommon.SpanID{1, 6: byte(s >> 8), 7: byte(s)})
		if root := s - s%per; root != s {
			sp.SetParentSpanID(pcommon.SpanID{1, 6: byte(root >> 8), 7: byte(root)})
		}
		sp.SetName("step")
		sp.SetStartTimestamp(t0 + pcommon.Timestamp(s))
		sp.SetEndTimestamp(t0 + pcommon.Timestamp(s) + 1e6)
		sp.Attributes().PutStr("records.kind", "step")
		sp.Attributes().PutStr("records.effect", "changed")
	}
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return body
}
