package collector

// Spans whose parent never comes (issue 44.5): a kept session's children
// wait for their parent, written ahead; what they hold counts against
// max_held_bytes, and past it they are recorded at once, so the
// Collector's memory stays within the bound and a stated overhead.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// orphanBody is request i: n changed spans of the sender "orphans", each
// with a 1 KiB attribute, each the child of a parent that never comes
// (traces of ten children under one missing parent).
func orphanBody(i, n int) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "orphans")
	rs.Resource().Attributes().PutStr("service.instance.id", "orphans-1")
	ss := rs.ScopeSpans().AppendEmpty()
	t0 := pcommon.NewTimestampFromTime(time.Now())
	blob := strings.Repeat("x", 1024)
	for s := range n {
		tr := s / 10
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{byte(i >> 8), byte(i), byte(tr >> 8), byte(tr), 15: 1})
		sp.SetSpanID(pcommon.SpanID{2, 6: byte(s >> 8), 7: byte(s)})
		sp.SetParentSpanID(pcommon.SpanID{1, 7: 1}) // never sent
		sp.SetName(fmt.Sprint("compile ", i, " ", s))
		sp.SetStartTimestamp(t0 + pcommon.Timestamp(s))
		sp.SetEndTimestamp(t0 + pcommon.Timestamp(s) + 1e6)
		sp.Attributes().PutStr("records.kind", "artifact")
		sp.Attributes().PutStr("records.effect", "changed")
		sp.Attributes().PutStr("blob", blob)
	}
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return body
}

// orphansRSSBound is the bound on the Collector's peak anonymous
// memory for 60,000 orphaned children with max_held_bytes at 16 MiB.
const orphansRSSBound = 256 << 20

// 60 requests of 1,000 changed children (a 1 KiB attribute each) whose
// parents never come, max_held_bytes 16 MiB: the Collector's peak
// anonymous memory stays under 256 MiB, and every span it acknowledged is
// stored once — those still waiting at its stop recorded by the next
// start, after decision_wait. About 20 s.
func TestOrphansStayWithinHeldBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs otelcol-records with 60,000 spans")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	p := freePorts(t)
	col := startAt(t, bins["otelcol"], pipelineConfig(dir, "    max_held_bytes: 16777216", ""), p)
	const requests, perRequest = 60, 1000
	bodies := make([][]byte, requests)
	for i := range bodies {
		bodies[i] = orphanBody(i, perRequest)
	}
	stop := make(chan struct{})
	peak := peakAnon(col.cmd.Process.Pid, stop)
	for _, b := range bodies {
		postOK(t, col, b)
	}
	close(stop)
	rss := <-peak
	col.stop(t)
	// What waits at the stop is written ahead: the next start records it
	// after its decision_wait.
	col = startAt(t, bins["otelcol"], pipelineConfig(dir, "    max_held_bytes: 16777216\n    decision_wait: 1s", ""), p)
	waitRecorded(t, dir, col, requests*perRequest)
	col.stop(t)
	t.Logf("%d orphaned children, max_held_bytes 16 MiB: peak RssAnon %d MiB (bound %d MiB)", requests*perRequest, rss>>20, orphansRSSBound>>20)
	if rss > orphansRSSBound {
		t.Errorf("peak RssAnon %d MiB, over %d MiB", rss>>20, orphansRSSBound>>20)
	}
	storedOnceInOneSession(t, dir, requests*perRequest)
}

// waitRecorded waits until the store in dir, written by the Collector c,
// holds want span ids, for at most 30 s.
func waitRecorded(t *testing.T, dir string, c *collectorProc, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		stored, _ := storedIDs(t, dir)
		if len(stored) >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d span ids stored after 30 s, want %d\n%s", len(stored), want, c.log)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
