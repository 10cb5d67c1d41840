//go:build linux

package importer

import (
	"context"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// BenchmarkImport measures the Importer's intake as the Collector's
// records processor runs it for figure 12 (keep_by trace, handing on
// only, with a state directory): each op is one request of 100 traces of
// 10 nested spans, every span changed something (kept) or none did
// (warm), handed on to a Forward that drops them. It is the quick loop
// for take, settle, place and record, without pdata on either side.
// cpu-ns/span is the process's CPU over the requests and the Shutdown,
// the garbage collector's and the Importer's loop's included: on a shared
// machine a steadier figure than the time. Run it with
//
//	go test ./importer -run '^$' -bench Import -benchtime 400x -count 5
func BenchmarkImport(b *testing.B) {
	for _, effect := range []string{"changed", "observed"} {
		b.Run(map[string]string{"changed": "kept", "observed": "warm"}[effect], func(b *testing.B) {
			b.Setenv("OTELRECORDS_CACHE_DIR", b.TempDir())
			forward := func([]sessions.Entry) error { return nil }
			im, err := New(b.TempDir(), Config{Forward: forward, ForwardOnly: true}, WithKeepBy(KeepByTrace))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			spans := benchSpans(effect)
			res := []attribute.KeyValue{attribute.String("service.name", "bench"), attribute.String("service.instance.id", "bench-1")}
			b.ReportAllocs()
			runtime.GC()
			cpu0 := processCPU(b)
			b.ResetTimer()
			for i := range b.N {
				now := time.Now()
				for j := range spans {
					s := &spans[j]
					s.TraceID[0], s.TraceID[1], s.TraceID[2] = byte(i>>16), byte(i>>8), byte(i)
					s.Start, s.End = now.Add(time.Duration(j%10)), now.Add(time.Millisecond)
				}
				if _, err := im.Import(ctx, Batch{Resource: res, Spans: spans}); err != nil {
					b.Fatal(err)
				}
			}
			if err := im.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N*len(spans)), "cpu-ns/span")
		})
	}
}

// benchSpans is one request of BenchmarkImport: 100 traces of 10 nested
// spans whose records.effect is effect.
func benchSpans(effect string) []Span {
	spans := make([]Span, 0, 1000)
	for tr := range 100 {
		tid := trace.TraceID{3: byte(tr), 15: 1}
		for s := range 10 {
			sp := Span{TraceID: tid, SpanID: trace.SpanID{7: byte(s + 1)}, Name: "compile unit " + strconv.Itoa(s),
				Attributes: []attribute.KeyValue{attribute.String("records.kind", "artifact"), attribute.String("records.effect", effect),
					attribute.String("target", "lib/unit"+strconv.Itoa(s)+".o"), attribute.Int("bytes", 1000*s)}}
			if s > 0 {
				sp.ParentSpanID = trace.SpanID{7: byte(s)}
			}
			spans = append(spans, sp)
		}
	}
	return spans
}

// processCPU is the process's CPU so far, user and system, in nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
