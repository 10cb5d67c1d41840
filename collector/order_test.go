package collector

// Order across a graceful restart (issue 44.7): children waiting for
// their parent when the Collector is stopped are left written ahead, not
// stamped, so that the parent coming after the next start is stamped
// before them.

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// familyBody is an OTLP/HTTP body of the sender "family": the spans of
// one trace, each name with its span id and parent's (0: a root), all
// changed, started at start.
func familyBody(start time.Time, spans ...[3]any) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "family")
	rs.Resource().Attributes().PutStr("service.instance.id", "family-1")
	ss := rs.ScopeSpans().AppendEmpty()
	t0 := pcommon.NewTimestampFromTime(start)
	for i, s := range spans {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{4, 15: 4})
		sp.SetSpanID(pcommon.SpanID{7: s[1].(byte)})
		if p := s[2].(byte); p != 0 {
			sp.SetParentSpanID(pcommon.SpanID{7: p})
		}
		sp.SetName(s[0].(string))
		sp.SetStartTimestamp(t0 + pcommon.Timestamp(i)*1e6)
		sp.SetEndTimestamp(t0 + pcommon.Timestamp(i)*1e6 + 1e5)
		sp.Attributes().PutStr("records.kind", "step")
		sp.Attributes().PutStr("records.effect", "changed")
	}
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return body
}

// A root, then 20 children of a parent that has not come; the Collector
// stopped with SIGTERM and started again; the parent 8 s after the
// children (decision_wait is 30 s): the parent is stamped before every
// child, in one session. About 12 s.
func TestGracefulRestartKeepsParentsFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs otelcol-records for 12 s")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	cfg := pipelineConfig(dir, "", "")
	p := freePorts(t)
	col := startAt(t, bins["otelcol"], cfg, p)
	t0 := time.Now()
	spans := [][3]any{{"build", byte(1), byte(0)}}
	for i := range 20 {
		spans = append(spans, [3]any{fmt.Sprint("compile ", i), byte(10 + i), byte(2)})
	}
	postOK(t, col, familyBody(t0, spans...))
	col.stop(t)
	col = startAt(t, bins["otelcol"], cfg, p)
	sleepUntil(t0, 8*time.Second)
	postOK(t, col, familyBody(t0, [3]any{"phase", byte(2), byte(1)}))
	col.stop(t)
	rows, recs, _ := storeRecords(t, dir)
	if len(rows) != 1 {
		t.Fatalf("%d sessions, want 1", len(rows))
	}
	seq := map[string]uint64{}
	for _, r := range recs[rows[0].ID] {
		seq[r.Record.Name] = r.Stamp.Seq
	}
	t.Logf("seqs: build %d, phase %d, compile 0 %d, compile 19 %d (%d records)", seq["build"], seq["phase"], seq["compile 0"], seq["compile 19"], len(seq))
	if len(seq) != 22 {
		t.Fatalf("%d records, want 22", len(seq))
	}
	for name, s := range seq {
		if name != "build" && name != "phase" && s < seq["phase"] {
			t.Errorf("%s stamped at %d, before its parent at %d", name, s, seq["phase"])
		}
	}
}
