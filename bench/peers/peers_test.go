//go:build bench

package peers

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// roundFlag is bench/run's round: on odd rounds the pipelines of each
// group run in the reverse order, so that neither side of a comparison
// always runs first.
var roundFlag = flag.Int("round", 0, "the round of bench/run: odd rounds run each group in reverse")

// peer is one line of the benchmark: a pipeline and the spans it is given.
type peer struct {
	name    string
	p       pipeline
	changed bool // every span changed something (kept), or none did (warm)
}

var (
	nop           = pipeline{exporter: "nop"}
	tailSampling  = pipeline{processors: []string{"tail_sampling"}, exporter: "nop"}
	byTrace       = pipeline{processors: []string{"records"}, exporter: "nop"}
	bySession     = pipeline{processors: []string{"records/session"}, exporter: "nop"}
	fileExporter  = pipeline{exporter: "file"}
	tailFile      = pipeline{processors: []string{"tail_sampling"}, exporter: "file"}
	recordsExport = pipeline{exporter: "records"}
)

// groups are the pipelines compared with each other, each group run
// back to back: the Collector keeping nothing; "persist these spans
// locally" (the fileexporter alone, and behind the tail sampler: what a
// user runs to keep what changed on disk, the records exporter's own
// job); "keep only what changed", on warm spans (nothing changed:
// every trace dropped) and on kept ones (every trace kept).
var groups = [][]peer{
	{{"nop", nop, true}},
	{{"fileexporter", fileExporter, true}, {"records-exporter", recordsExport, true}, {"tailsampling-file", tailFile, true}},
	{{"tailsampling-warm", tailSampling, false}, {"records-processor-warm", byTrace, false}, {"records-processor-session-warm", bySession, false}},
	{{"tailsampling-kept", tailSampling, true}, {"records-processor-kept", byTrace, true}, {"records-processor-session-kept", bySession, true}},
}

// settle is how long a Collector runs on after its last request before
// it is stopped: past the tail sampler's decision_wait (1 s) and the
// tick that decides (every second), so that its decisions are made on
// their timer, as in service, rather than all at once at shutdown.
// Every pipeline settles as long, so their idle CPU is alike.
const settle = 2500 * time.Millisecond

// BenchmarkPeers measures spans/s and the Collector's CPU per span of
// every pipeline of groups on the same spans: each op is one OTLP/HTTP
// request of spansPerRequest spans (100 traces of 10 nested spans), sent
// by 4 clients at once. spans/s is the rate the requests were answered;
// cpu-ns/span is the process's CPU from its first request to its exit,
// its shutdown included. Run it with
//
//	GOWORK=off go test -tags bench -run '^$' -bench Peers -benchtime 200x
func BenchmarkPeers(b *testing.B) {
	for _, g := range groups {
		if *roundFlag%2 == 1 {
			g = slices.Clone(g)
			slices.Reverse(g)
		}
		for _, pr := range g {
			b.Run(pr.name, func(b *testing.B) {
				bodies := requests(b, b.N, pr.changed)
				col := start(b, pr.p)
				cpu0 := col.cpu(b)
				b.ResetTimer()
				t0 := time.Now()
				col.send(b, bodies)
				elapsed := time.Since(t0)
				b.StopTimer()
				if b.N > 1 { // not the testing package's probe of one op, whose figures it drops
					time.Sleep(settle)
				}
				cpu := col.stop(b) - cpu0
				spans := float64(b.N * spansPerRequest)
				b.ReportMetric(spans/elapsed.Seconds(), "spans/s")
				b.ReportMetric(float64(cpu)/spans, "cpu-ns/span")
			})
		}
	}
}

// TestPeersKeepWhatTheySay checks that the benchmark measures what its
// lines say, with the same configurations: both exporters persist every
// span they are given, and both samplers hand on every span of the kept
// traces and none of the warm ones (each followed here by the file
// exporter, so that what they hand on can be counted).
func TestPeersKeepWhatTheySay(t *testing.T) {
	const n = 20
	want := n * spansPerRequest
	run := func(t *testing.T, p pipeline, changed bool) *collectorProc {
		col := start(t, p)
		col.send(t, requests(t, n, changed))
		col.stop(t)
		return col
	}
	t.Run("fileexporter", func(t *testing.T) {
		if got := fileSpans(t, run(t, fileExporter, true)); got != want {
			t.Errorf("the file holds %d spans, want %d", got, want)
		}
	})
	t.Run("records-exporter", func(t *testing.T) {
		if got := storedRecords(t, run(t, recordsExport, true)); got != want {
			t.Errorf("the store holds %d records, want %d", got, want)
		}
	})
	for _, proc := range []string{"tail_sampling", "records", "records/session"} {
		for _, changed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/changed=%v", proc, changed), func(t *testing.T) {
				got := fileSpans(t, run(t, pipeline{processors: []string{proc}, exporter: "file"}, changed))
				if w := map[bool]int{true: want, false: 0}[changed]; got != w {
					t.Errorf("%s handed on %d spans, want %d", proc, got, w)
				}
			})
		}
	}
}

// fileSpans counts the spans of the fileexporter's file: OTLP messages,
// each after its length in 4 bytes.
func fileSpans(t *testing.T, col *collectorProc) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(col.dir, "spans.pb"))
	if err != nil {
		t.Fatal(err)
	}
	spans := 0
	for len(raw) > 0 {
		if len(raw) < 4 || len(raw) < 4+int(binary.BigEndian.Uint32(raw)) {
			t.Fatal(io.ErrUnexpectedEOF)
		}
		n := binary.BigEndian.Uint32(raw)
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw[4 : 4+n])
		if err != nil {
			t.Fatal(err)
		}
		spans += td.SpanCount()
		raw = raw[4+n:]
	}
	return spans
}

// storedRecords counts the records of the records exporter's store.
func storedRecords(t *testing.T, col *collectorProc) int {
	t.Helper()
	st, err := badgerstore.Open(filepath.Join(col.dir, "store"), badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	for _, err := range sessions.NewRecords(st).All("artifact") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

const spansPerRequest = 1000

// epoch is when every span of the run starts, so that request i is the
// same bytes for every pipeline.
var epoch = pcommon.NewTimestampFromTime(time.Now())

var (
	bodiesMu sync.Mutex
	bodies   = map[[2]int][][]byte{}
)

// requests returns the OTLP/HTTP bodies of n requests, changed or warm,
// made once and given to every pipeline.
func requests(t testing.TB, n int, changed bool) [][]byte {
	t.Helper()
	key := [2]int{n, map[bool]int{true: 1}[changed]}
	bodiesMu.Lock()
	defer bodiesMu.Unlock()
	if bs, ok := bodies[key]; ok {
		return bs
	}
	bs := make([][]byte, n)
	for i := range bs {
		var err error
		if bs[i], err = (&ptrace.ProtoMarshaler{}).MarshalTraces(request(i, changed)); err != nil {
			t.Fatal(err)
		}
	}
	bodies[key] = bs
	return bs
}

// request is request i: 100 traces of its own, each a build step of 10
// nested spans (collector/bench_test.go's shape), every span changed
// something or none did.
func request(i int, changed bool) ptrace.Traces { return requestOf(i, spansPerRequest/10, changed) }

// requestOf is request i of the given number of traces of 10 spans.
func requestOf(i, traces int, changed bool) ptrace.Traces {
	effect := map[bool]string{true: "changed", false: "observed"}[changed]
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench")
	rs.Resource().Attributes().PutStr("service.instance.id", "bench-1")
	ss := rs.ScopeSpans().AppendEmpty()
	for tr := range traces {
		tid := pcommon.TraceID{byte(i >> 16), byte(i >> 8), byte(i), byte(tr), 15: 1} // never the invalid zero id
		for s := range 10 {
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(tid)
			sp.SetSpanID(pcommon.SpanID{7: byte(s + 1)})
			if s > 0 {
				sp.SetParentSpanID(pcommon.SpanID{7: byte(s)})
			}
			sp.SetName("compile unit " + strconv.Itoa(s))
			sp.SetStartTimestamp(epoch + pcommon.Timestamp(s))
			sp.SetEndTimestamp(epoch + 1e6)
			sp.Attributes().PutStr("records.kind", "artifact")
			sp.Attributes().PutStr("records.effect", effect)
			sp.Attributes().PutStr("target", "lib/unit"+strconv.Itoa(s)+".o")
			sp.Attributes().PutInt("bytes", int64(1000*s))
		}
	}
	return td
}
