//go:build bench

package peers

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The gateway of issue 48: a Collector in the shape of the Collector
// testbed's load tests — spans arriving at a steady 10,000 a second in
// requests of 100, every span changed something — through a processor
// that keeps what changed, into an OTLP exporter that hands it on to the
// next hop. Ours (the records processor, keep by trace) beside the tail
// sampler, each a Collector of its own from the same distribution, on the
// same spans at the same rate.
const (
	gatewayRate       = 10_000 // spans a second
	gatewaySpansPerOp = 100    // spans a request: 10 traces of 10 spans
)

var gatewayPeers = []struct {
	name       string
	processors []string
}{
	{"tailsampling-otlp", []string{"tail_sampling"}},
	{"records-processor-otlp", []string{"records"}},
}

// BenchmarkGateway measures, for each processor, the Collector's CPU per
// span and its peak anonymous memory (RssAnon, sampled every 50 ms: what
// the process holds, not the files Badger maps) while b.N requests of 100
// changed spans arrive at 10,000 spans a second, from 4 senders, and the
// spans are handed on over OTLP/HTTP to a downstream that answers at once.
// CPU runs from the first request to the process's exit (its shutdown
// included), as BenchmarkPeers counts it. Every span handed on is
// counted: a run that hands on fewer than it was given fails. Run it with
//
//	GOWORK=off go test -tags bench -run '^$' -bench Gateway -benchtime 1000x
//
// (1,000 requests: 10 s at the rate).
func BenchmarkGateway(b *testing.B) {
	order := gatewayPeers
	if *roundFlag%2 == 1 {
		order = []struct {
			name       string
			processors []string
		}{gatewayPeers[1], gatewayPeers[0]}
	}
	for _, g := range order {
		b.Run(g.name, func(b *testing.B) {
			bodies := make([][]byte, b.N)
			for i := range bodies {
				var err error
				if bodies[i], err = (&ptrace.ProtoMarshaler{}).MarshalTraces(requestOf(i, gatewaySpansPerOp/10, true)); err != nil {
					b.Fatal(err)
				}
			}
			down := newDownstream()
			defer down.srv.Close()
			col := start(b, pipeline{processors: g.processors, exporter: "otlphttp", downstream: down.srv.URL})
			peak := col.sampleAnon(50 * time.Millisecond)
			cpu0 := col.cpu(b)
			b.ResetTimer()
			t0 := time.Now()
			col.sendAt(b, bodies, time.Second*gatewaySpansPerOp/gatewayRate)
			elapsed := time.Since(t0)
			b.StopTimer()
			want := int64(b.N * gatewaySpansPerOp)
			// The tail sampler decides a second after a trace's first span:
			// wait for what it hands on, before the stop would decide it
			// at once.
			for deadline := time.Now().Add(10 * time.Second); down.spans.Load() < want && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
			anon := peak()
			cpu := col.stop(b) - cpu0
			if got := down.spans.Load(); got != want {
				b.Fatalf("%s handed on %d spans, want %d", g.name, got, want)
			}
			spans := float64(want)
			b.ReportMetric(spans/elapsed.Seconds(), "spans/s")
			b.ReportMetric(float64(cpu)/spans, "cpu-ns/span")
			b.ReportMetric(float64(anon)/(1<<20), "anon-MiB")
		})
	}
}

// downstream is the next hop: an OTLP/HTTP traces endpoint that counts
// the spans it is given and answers at once.
type downstream struct {
	srv   *httptest.Server
	spans atomic.Int64
}

func newDownstream() *downstream {
	d := &downstream{}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.spans.Add(int64(recordSpans(td)))
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	}))
	return d
}

// sendAt posts the bodies from senders clients, one every interval (0:
// as fast as the clients take them), as a load generator at a fixed rate
// does: a request late because the Collector was slow to answer does not
// slow the ones after it. It fails t on any request not answered 200.
func (c *collectorProc) sendAt(t testing.TB, bodies [][]byte, interval time.Duration) {
	t.Helper()
	next := make(chan []byte, len(bodies))
	if interval == 0 {
		next = make(chan []byte)
	}
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for body := range next {
				resp, err := client.Post(c.url, "application/x-protobuf", bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("POST: %s", resp.Status)
				}
			}
		})
	}
	var tick *time.Ticker
	if interval > 0 {
		tick = time.NewTicker(interval)
		defer tick.Stop()
	}
	for _, b := range bodies {
		next <- b
		if tick != nil {
			<-tick.C
		}
	}
	close(next)
	wg.Wait()
}

// sampleAnon samples the Collector's RssAnon every interval until the
// returned function is called, which returns the largest, in bytes.
func (c *collectorProc) sampleAnon(interval time.Duration) func() int64 {
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	read := func() {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
		if err != nil {
			return
		}
		for line := range strings.Lines(string(raw)) {
			if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if kb<<10 > peak.Load() {
					peak.Store(kb << 10)
				}
			}
		}
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			read()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		read()
		return peak.Load()
	}
}
