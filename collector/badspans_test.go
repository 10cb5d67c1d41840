package collector

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// Spans no record can be made of — an empty trace id, an all-zero span id
// — and a span id repeated in one batch, sent to a real Collector: the
// good spans are stored, the repeated one once (the first), the bad ones
// not at all, and the Collector's own telemetry counts each (rejected,
// deduplicated); a batch of nothing but bad spans is refused as a
// permanent error (HTTP 400), which no retry repeats.
func TestBadSpansRejectedAndCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a Collector")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	p := freePorts(t)
	metrics := freePort(t)
	cfg := strings.Replace(pipelineConfig(dir, "", ""), `    metrics:
      level: none`, fmt.Sprintf(`    metrics:
      level: detailed
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d`, metrics), 1)
	col := startAt(t, bins["otelcol"], cfg, p)
	post := func(td ptrace.Traces) (int, ptraceotlp.ExportResponse) {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(col.url, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out := ptraceotlp.NewExportResponse()
		out.UnmarshalProto(b)
		return resp.StatusCode, out
	}
	batch := func(spans ...func(ptrace.Span)) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.instance.id", "bad-sender")
		ss := rs.ScopeSpans().AppendEmpty()
		now := pcommon.NewTimestampFromTime(time.Now())
		for i, f := range spans {
			s := ss.Spans().AppendEmpty()
			s.SetName(fmt.Sprint("span ", i))
			s.SetTraceID(pcommon.TraceID{1, byte(i + 1)})
			s.SetSpanID(pcommon.SpanID{7: byte(i + 1)})
			s.SetStartTimestamp(now - 1e6)
			s.SetEndTimestamp(now)
			s.Attributes().PutStr("records.kind", "step")
			s.Attributes().PutStr("records.effect", "changed")
			f(s)
		}
		return td
	}
	good := func(ptrace.Span) {}
	noTrace := func(s ptrace.Span) { s.SetTraceID(pcommon.TraceID{}) }
	noSpan := func(s ptrace.Span) { s.SetSpanID(pcommon.SpanID{}) }
	twin := func(s ptrace.Span) {
		s.SetTraceID(pcommon.TraceID{1, 1})
		s.SetSpanID(pcommon.SpanID{7: 1})
		s.SetName("span 0 again")
	}
	if code, _ := post(batch(good, noTrace, noSpan, twin, good)); code != http.StatusOK {
		t.Fatalf("a batch with good spans among bad ones: HTTP %d, want 200", code)
	}
	if code, _ := post(batch(noTrace, noSpan)); code != http.StatusBadRequest {
		t.Errorf("a batch of bad spans only: HTTP %d, want 400 (a permanent error)", code)
	}
	time.Sleep(time.Second)
	scrape, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(scrape.Body)
	scrape.Body.Close()
	col.stop(t)
	value := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\{exporter="records"[^}]*\} (\S+)$`).FindStringSubmatch(string(text))
		if m == nil {
			return ""
		}
		return m[1]
	}
	for name, want := range map[string]string{
		"otelcol_records_spans_rejected":     "4",
		"otelcol_records_spans_deduplicated": "1",
		"otelcol_records_spans_accepted":     "3",
	} {
		if got := value(name); got != want {
			t.Errorf("%s = %q, want %s", name, got, want)
		}
	}
	stored, _ := storedIDs(t, dir)
	if len(stored) != 2 {
		t.Errorf("stored %v, want the two good spans", stored)
	}
	for id, n := range stored {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
	if !strings.Contains(col.log.String(), "rejected spans") {
		t.Errorf("the Collector's log says nothing of the rejected spans:\n%s", col.log)
	}
}
